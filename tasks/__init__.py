"""Stage logic: pure functions over tables, each with a thin Prefect task around it."""
