-- Every job state is binary now. The C step of this migration (migrate.c, convert_states), run in
-- its transaction before this SQL, rewrote each state still in an older form - JSON in
-- state_json (written before 002), a whole-state blob in state_bin (written before 005) - as
-- the state without its window in state_bin and one job_window row per sample. Nothing reads
-- or writes the JSON form any more.
ALTER TABLE jobs DROP COLUMN state_json;
