"""The Prefect side of the artifact store (schemas/store.py knows nothing of Prefect): contract results
shown on the flow run, the flow run and temporary API server recorded with each run, and the flow runs
of runs whose process died set to Crashed."""

from __future__ import annotations

import logging
import re
import sys

from prefect.artifacts import create_markdown_artifact
from prefect.client.orchestration import get_client
from prefect.client.schemas.objects import StateType
from prefect.context import FlowRunContext, TaskRunContext
from prefect.exceptions import ObjectNotFound
from prefect.runtime import deployment, flow_run
from prefect.settings import PREFECT_API_URL
from prefect.states import Crashed

from judgeops.data_contracts import ContractOutcome
from judgeops.schemas import liveness
from judgeops.schemas.store import RunObserver

log = logging.getLogger("judgeops")


class PrefectObserver(RunObserver):
    def context(self) -> dict:
        """The Prefect flow run this record belongs to and the temporary API server its process started."""
        return {
            "flow_run_id": flow_run.id,  # None outside a flow run
            "temporary_server": temporary_prefect_server(),
        }

    def contract_checked(self, outcome: ContractOutcome) -> None:
        """Show the result on the Prefect flow run, when there is one."""
        if FlowRunContext.get() is None and TaskRunContext.get() is None:
            return
        key = "contract-" + re.sub(r"[^a-z0-9-]+", "-", outcome.artifact.lower())
        create_markdown_artifact(
            markdown=outcome.markdown(), key=key, description=f"data contract of {outcome.artifact}"
        )

    def contract_reused(self, name: str, computed_by: str, validation: dict) -> None:
        """A reused artifact's contract result, from the run that computed it, on this flow run too (the UI
        showed none for a reused or backfilled run)."""
        if FlowRunContext.get() is None and TaskRunContext.get() is None:
            return
        outcome = ContractOutcome(artifact=name, validation=validation, clean=None, quarantined=None)
        key = "contract-" + re.sub(r"[^a-z0-9-]+", "-", name.lower())
        create_markdown_artifact(
            markdown=f"Reused from run `{computed_by}`, validated when that run computed it.\n\n"
            + outcome.markdown(),
            key=key,
            description=f"data contract of {name} (reused from run {computed_by})",
        )

    def runs_crashed(self, records: list[dict]) -> list[dict]:
        """Set each record's Prefect flow run to Crashed where a Prefect API is reachable — in a flow run, or
        with PREFECT_API_URL set (a sweep without one leaves it to the next flow's). Returns the records done."""
        records = [r for r in records if (r.get("prefect") or {}).get("flow_run_id")]
        if not records or (FlowRunContext.get() is None and not PREFECT_API_URL.value()):
            return []
        done = []
        try:
            with get_client(sync_client=True) as client:
                for record in records:
                    flow_run_id = record["prefect"]["flow_run_id"]
                    try:
                        run = client.read_flow_run(flow_run_id)
                    except ObjectNotFound:  # recorded by another Prefect server: nothing to fix from here
                        done.append(record)
                        continue
                    if run.state is not None and not run.state.is_final():
                        client.set_flow_run_state(flow_run_id, Crashed(message=record["error"]), force=True)
                    done.append(record)
        except Exception as exc:  # the run record already says crashed; Prefect's view is best effort
            log.warning("could not mark the crashed runs' Prefect flow runs: %s", exc)
        return done

    def suspensions_ended(self, records: list[dict]) -> dict[str, str]:
        """The suspended runs whose flow run is final (a suspension that timed out fails; a cancelled one), where
        a Prefect API is reachable: run id → the flow run's state name."""
        records = [r for r in records if (r.get("prefect") or {}).get("flow_run_id")]
        if not records or (FlowRunContext.get() is None and not PREFECT_API_URL.value()):
            return {}
        ended = {}
        try:
            with get_client(sync_client=True) as client:
                for record in records:
                    try:
                        state = client.read_flow_run(record["prefect"]["flow_run_id"]).state
                    except ObjectNotFound:  # recorded by another Prefect server: not ours to judge
                        continue
                    if state is not None and state.is_final():
                        ended[record["run_id"]] = state.name
        except Exception as exc:  # noqa: BLE001 - best effort: the next sweep asks again
            log.warning("could not read the suspended runs' flow runs: %s", exc)
        return ended

    def cancelled(self) -> str | None:
        """Where this flow run's state is Cancelling or Cancelled (the UI's Cancel, `prefect flow-run cancel`, an
        automation; the worker then stops the process with SIGTERM): "cancelled through Prefect" with the
        state's message where it has one. Asked only after a signal stopped the run, and only of a deployment's
        run (a worker's: `judgeops run` handles its own signals, api/interrupts.py); best effort."""
        if not flow_run.id or not deployment.id:
            return None
        try:
            with get_client(sync_client=True) as client:
                state = client.read_flow_run(flow_run.id).state
        except Exception as exc:  # noqa: BLE001 - the run is recorded cancelled by its signal either way
            log.warning("could not read why the flow run stopped: %s", exc)
            return None
        if state is None or state.type not in (StateType.CANCELLING, StateType.CANCELLED):
            return None
        said = f": {state.message}" if state.message else ""
        return f"cancelled through Prefect (flow run {state.name}{said})"


def temporary_prefect_server() -> dict | None:
    """The temporary Prefect API server this process started (CLI runs without PREFECT_API_URL), if any:
    its pid and start time, so a sweep can stop it when this process dies without stopping it."""
    module = sys.modules.get("prefect.server.api.server")  # not imported: this process started none
    if module is None:  # (importing it to look costs ~3 s per command)
        return None
    for server in list(module.SubprocessASGIServer._instances.values()):
        proc = getattr(server, "server_process", None)
        if proc is not None and proc.poll() is None:
            return {"pid": proc.pid, "pid_started": liveness.process_started(proc.pid)}
    return None
