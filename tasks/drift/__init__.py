"""Weekly drift recalibration (issue 8): the simulation of the capability-bias paper so far."""
