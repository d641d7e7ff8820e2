"""Weekly drift recalibration: the estimators and the chain (calibrate.py) and the paper's simulation (simulate.py)."""
