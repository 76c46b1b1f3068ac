"""Where jobs run: threads on this machine, or tasks on a Ray cluster.

A job is one (scenario point, seed) run as a JSON string from the Rust planner, and
its output is a JSON string; :func:`run_job` turns one into the other wherever it
runs. Outputs come back in job order whatever the order they finish in, so every
engine gives the same results, byte for byte.
"""

from __future__ import annotations

import operator
import os
import sys
from concurrent.futures import ThreadPoolExecutor, as_completed
from typing import Callable, List, Optional, Sequence, Union

from . import _darkbuf
from .errors import DarkbufError

ENGINES = ("local", "ray")

Progress = Union[None, bool, Callable[[int, int], None]]


def run_job(job: str, version: Optional[str] = None) -> str:
    """Runs one job. ``version`` is the planner's darkbuf version: a worker with another
    version refuses, since it could simulate differently."""
    if version is not None and version != _darkbuf.__version__:
        raise DarkbufError(
            f"this worker has darkbuf {_darkbuf.__version__} but the job was planned with {version}; "
            "install the same darkbuf on every node of the cluster"
        )
    return _darkbuf.run_job(job)


def reporter(progress: Progress, total: int, what: str = "runs") -> Callable[[int], None]:
    """``report(done)``: nothing (``False``), a line on stderr (``True``; ``None``: only
    when stderr is a terminal), or the caller's ``progress(done, total)``."""
    if callable(progress):
        return lambda done: progress(done, total)
    if progress is None:
        progress = sys.stderr.isatty()
    if not progress:
        return lambda done: None

    def line(done: int) -> None:
        end = "\n" if done == total else ""
        sys.stderr.write(f"\rdarkbuf: {done}/{total} {what}{end}")
        sys.stderr.flush()

    return line


def default_workers() -> int:
    """The CPUs this process may use."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:  # not on Linux
        return max(1, os.cpu_count() or 1)


def check_workers(workers: Optional[int]) -> None:
    """``workers``: ``None`` (or 0: this process's CPUs) or a number of threads."""
    if workers is None:
        return
    try:
        workers = operator.index(workers)
    except TypeError:
        raise TypeError(f"workers={workers!r}: give a number of threads (an int), or None for this process's CPUs") from None
    if workers < 0:
        raise ValueError(f"workers={workers}: give 1 or more threads, or None for this process's CPUs")


def local(jobs: Sequence[str], workers: Optional[int] = None, progress: Progress = None) -> List[str]:
    """Runs the jobs on a pool of threads (the Rust simulator releases the GIL, so they
    run in parallel). The first failure is raised once the running jobs end; jobs not
    started yet are cancelled."""
    check_workers(workers)
    report = reporter(progress, len(jobs))
    outs: List[Optional[str]] = [None] * len(jobs)
    if not jobs:
        return []
    n = min(workers or default_workers(), len(jobs))
    with ThreadPoolExecutor(max_workers=n, thread_name_prefix="darkbuf") as pool:
        futures = {pool.submit(_darkbuf.run_job, job): i for i, job in enumerate(jobs)}
        try:
            for done, f in enumerate(as_completed(futures), 1):
                outs[futures[f]] = f.result()
                report(done)
        except BaseException:
            for f in futures:
                f.cancel()
            raise
    return outs  # type: ignore[return-value]


def _ray():
    try:
        import ray
    except ImportError as e:
        raise ImportError("engine='ray' needs Ray: pip install 'darkbuf[ray]' (or pip install ray)") from e
    return ray


def ray_map(
    fn: Callable[..., str],
    jobs: Sequence[str],
    *args,
    address: Optional[str] = None,
    retries: int = 3,
    progress: Progress = None,
) -> List[str]:
    """``[fn(job, *args) for job in jobs]`` as Ray tasks, in job order.

    Connects with ``ray.init(address=address)`` unless Ray is initialized already
    (then the existing connection is used); ``address=None`` starts a local instance,
    or joins the cluster ``RAY_ADDRESS`` names. A task whose worker process or node
    dies is retried up to ``retries`` times (Ray's ``max_retries``). An exception the
    task raised is raised here as itself (a :class:`ScenarioError` stays one), not as
    Ray's wrapper; the other tasks are cancelled.
    """
    ray = _ray()
    if retries < 0:
        raise ValueError(f"retries = {retries}: give 0 or more")
    if not ray.is_initialized():
        ray.init(address=address)
    report = reporter(progress, len(jobs))
    task = ray.remote(num_cpus=1, max_retries=retries)(fn)
    refs = [task.remote(job, *args) for job in jobs]
    where = {ref: i for i, ref in enumerate(refs)}
    outs: List[Optional[str]] = [None] * len(jobs)
    pending = list(refs)
    done = 0
    try:
        while pending:
            ready, pending = ray.wait(pending, num_returns=1)
            for ref in ready:
                outs[where[ref]] = ray.get(ref)
                done += 1
                report(done)
    except ray.exceptions.RayTaskError as e:
        for ref in pending:
            ray.cancel(ref)
        cause = getattr(e, "cause", None)
        if isinstance(cause, BaseException):
            raise cause from None
        raise
    except BaseException:
        for ref in pending:
            ray.cancel(ref)
        raise
    return outs  # type: ignore[return-value]


def ray(jobs: Sequence[str], address: Optional[str] = None, retries: int = 3, progress: Progress = None) -> List[str]:
    """Runs the jobs as Ray tasks (see :func:`ray_map`)."""
    return ray_map(run_job, jobs, _darkbuf.__version__, address=address, retries=retries, progress=progress)
