-- The judge-call cache's own database, beside Prefect's (POSTGRES_DB): deploy/compose.yaml mounts this file into
-- the postgres image's /docker-entrypoint-initdb.d, run once when the volume is new.
CREATE DATABASE judge_calls;
