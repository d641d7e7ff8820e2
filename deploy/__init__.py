"""The deployment definitions (prefect.yaml) and a CI example, shipped with the package as `judgeops.deploy`."""
