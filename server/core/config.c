/*
 * config.c - the built-in defaults of every option the core reads (core/README.md, Options),
 * with governor's differences: enabled defaults to true, excluded periods take a
 * time zone (default UTC), the key-skew diagnosis has options of its own, and so have the
 * safeguards of the `governor` profile (the default profile, so they default to on).
 */
#include <string.h>

#include "core/core_int.h"

#define MIN_MS (60 * 1000LL)
#define MIB    (1024LL * 1024LL)

void core_config_defaults(struct core_config *c)
{
    memset(c, 0, sizeof *c);
    c->enabled = true;
    c->scaling_enabled = true;
    c->metrics_window_ms = 15 * MIN_MS;
    c->stabilization_ms = 5 * MIN_MS;
    c->excluded_periods = "";
    c->excluded_tz = "UTC";
    c->util_target = 0.7;
    c->util_boundary = 0.3;
    c->util_max = NAN;
    c->util_min = NAN;
    c->scale_down_interval_ms = 60 * MIN_MS;
    c->vertex_min_parallelism = 1;
    c->vertex_max_parallelism = 200;
    c->scale_down_max_factor = 0.6;
    c->scale_up_max_factor = 100000.0;
    c->catch_up_ms = 30 * MIN_MS;
    c->restart_time_ms = 5 * MIN_MS;
    c->restart_tracking_enabled = false;
    c->restart_tracking_limit_ms = 15 * MIN_MS;
    c->backlog_lag_threshold_ms = 5 * MIN_MS;
    c->otpr_lag_threshold_ms = 30 * 1000;
    c->otpr_switch_threshold = 0.15;
    c->otpr_min_observations = 2;
    c->effectiveness_detection = false;
    c->effectiveness_threshold = 0.1;
    c->gc_pressure_threshold = 1.0;
    c->heap_usage_threshold = 1.0;
    c->mem_tuning_enabled = false;
    c->mem_tuning_overhead = 0.2;
    c->mem_maximize_managed = false;
    c->mem_scale_down_compensation = true;
    c->history_max_count = 3;
    c->history_max_age_ms = 24 * 60 * MIN_MS;
    c->busy_aggregator = CORE_AGG_MAX;
    c->exclude_ids = NULL;
    c->n_exclude_ids = 0;
    c->event_interval_ms = 30 * MIN_MS;
    c->quota_cpu = NAN;
    c->quota_memory = NAN;
    c->align_mode = CORE_ALIGN_BALANCED;
    c->align_plugin = NULL;
    c->observed_scalability_enabled = false;
    c->observed_scalability_min_observations = 3;
    c->observed_scalability_coefficient_min = 0.5;
    c->skew_enabled = true;
    c->skew_min_ratio = 1.5;
    c->skew_saturation = 0.05;
    c->profile = CORE_PROFILE_GOVERNOR;
    c->plausibility = true;
    c->plausibility_ratio = 100.0;
    c->window_keep_full = true;
    c->source_rate_guard = true;
    c->source_rate_warm_up_ms = MIN_MS;
    c->source_rate_max_bp = 0.1;
    c->catch_up_in_headroom = true;
    c->scale_down_with_restart = true;
    c->scale_down_early = true;
    c->scale_down_early_ms = 10 * MIN_MS;
    c->align_busiest_share = true;
    c->util_ceiling = 0.9;
    c->skew_knee = true;
    c->skew_limit_flow = true;
    c->rates_from_counters = true;
    c->source_stall = true;
    c->slots_per_tm = 1;
    c->tm_cpu = NAN;
    struct core_tm_memory *m = &c->tm;
    m->process_size = -1;
    m->flink_size = -1;
    m->task_heap = -1;
    m->managed_size = -1;
    m->framework_heap = 128 * MIB;
    m->framework_offheap = 128 * MIB;
    m->task_offheap = 0;
    m->metaspace = 256 * MIB;
    m->network_min = 64 * MIB;
    m->network_max = 1024 * MIB;
    m->overhead_min = 192 * MIB;
    m->overhead_max = 1024 * MIB;
    m->segment_size = 32 * 1024;
    m->managed_fraction = 0.4;
    m->network_fraction = 0.1;
    m->overhead_fraction = 0.1;
    m->buffers_per_channel = 2;
    m->floating_buffers = 8;
}

void core_config_profile(struct core_config *c, enum core_profile p)
{
    bool gov = p == CORE_PROFILE_GOVERNOR;
    struct core_config def;
    core_config_defaults(&def);
    c->profile = p;
    c->plausibility = gov;
    c->window_keep_full = gov;
    c->source_rate_guard = gov;
    c->catch_up_in_headroom = gov;
    c->scale_down_with_restart = gov;
    c->scale_down_early = gov;
    c->align_busiest_share = gov;
    c->util_ceiling = gov ? def.util_ceiling : NAN;
    c->skew_knee = gov;
    c->skew_limit_flow = gov;
    c->rates_from_counters = gov;
    c->source_stall = gov;
}
