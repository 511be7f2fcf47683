"""The unit jobs and where they run: in process or on Celery workers.

Owns the pure unit jobs (check URLs, recover one link, scan one target, one channel's digest),
their dispatchers, the Celery application (task names are explicit: `pagetrail.<kind>`), and
batch files. Imports scan/, recovery/ and the stages below them.

Modules, top to bottom (import-linter keeps the order: no cycle, not even inside a
function): celery_app, dispatch, batch, jobs, scan_jobs, broker (queues, Celery
configuration, sending), keys (job kinds and keys).
"""

from __future__ import annotations

from pagetrail._lazy import lazy_getattr

# name → defining module, imported on first use: the stages import each other's
# modules, and eager re-exports here would turn that into import cycles.
_EXPORTS: dict[str, str] = {
    "CeleryDispatcher": "pagetrail.tools.workers.dispatch",
    "InProcessDispatcher": "pagetrail.tools.workers.dispatch",
    "app": "pagetrail.tools.workers.celery_app",
    "batch_format": "pagetrail.tools.workers.batch",
    "configured_digest_runner": "pagetrail.tools.workers.dispatch",
    "failed": "pagetrail.tools.workers.batch",
    "get_dispatcher": "pagetrail.tools.workers.dispatch",
    "job_key": "pagetrail.tools.workers.jobs",
    "prepare_distributed": "pagetrail.tools.workers.dispatch",
    "read_batch": "pagetrail.tools.workers.batch",
    "scan_on_workers": "pagetrail.tools.workers.dispatch",
    "write_answers": "pagetrail.tools.workers.batch",
}
__all__ = [*_EXPORTS]  # each public name is listed once, in _EXPORTS


__getattr__ = lazy_getattr(__name__, _EXPORTS, globals())


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})
