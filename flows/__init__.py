"""Prefect flows: wiring, parameters and schedules only; the logic lives in judgeops.tasks."""
