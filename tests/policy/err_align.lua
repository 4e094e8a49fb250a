return {
  kind = "alignment",
  align = function(a, ctx)
    error("align boom")
  end,
}
