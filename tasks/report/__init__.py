"""The report: charts (charts.py) and tables (tables.py) rendered into one HTML file (render.py), and its key
tables as Prefect artifacts (publish.py); the per-sample viewer (samples.py)."""

from judgeops.tasks.report.publish import publish
from judgeops.tasks.report.render import render_report
from judgeops.tasks.report.samples import render_samples, sample_records
from judgeops.tasks.report.tables import previous_run_changes

__all__ = ["previous_run_changes", "publish", "render_report", "render_samples", "sample_records"]
