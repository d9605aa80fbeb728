"""Running: the Run panel and its settings, the controller that turns requests into jobs, the Jobs and Engine docks."""
