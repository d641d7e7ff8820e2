"""The capability-bias paper's 12-week drift simulation, written to a folder."""

from judgeops.tasks.drift.simulate import simulate_to as simulate_drift

__all__ = ["simulate_drift"]
