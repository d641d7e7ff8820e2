"""judgeops: how far to trust your LLM judges, as a Prefect pipeline."""

__version__ = "0.1.0"
