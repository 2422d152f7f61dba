"""The `cco` command: perf (the main job), info."""
