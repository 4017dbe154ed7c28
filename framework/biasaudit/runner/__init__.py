"""The orchestrator: one run stage by stage (pipeline), suites, sweeps, self-tests, calibration, cost."""
