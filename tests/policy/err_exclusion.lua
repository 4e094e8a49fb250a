return {
  kind = "exclusion",
  excluded = function(ctx)
    error("exclusion boom")
  end,
}
