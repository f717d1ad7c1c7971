"""A failed run prints its one line and nothing after it: store I/O still in flight on zarr's
event loop when the error ends the run (a server that died mid-batch) is cancelled on its own
loop, never destroyed at exit with an "Exception ignored in" traceback (seen on CI: aiobotocore's
context reset in a coroutine closed outside its context)."""

from __future__ import annotations

import subprocess
import sys
import textwrap

import pytest

SCRIPT = textwrap.dedent('''
    import asyncio, contextlib, contextvars, sys
    import click
    from emb.store._zarr import sync  # zarr's event loop, as the store runs its I/O there
    from emb.cli._errors import EmbCommand
    from emb.errors import StoreError

    VAR = contextvars.ContextVar("request")

    @contextlib.asynccontextmanager
    async def in_context():  # as aiobotocore's start_as_current_context: reset on the way out
        token = VAR.set("request")
        try:
            yield
        finally:
            VAR.reset(token)

    async def pending():
        async with in_context():
            await asyncio.Event().wait()  # a request that never comes back

    async def batch():
        async def failing():
            await asyncio.sleep(0.01)
            raise StoreError("the server at http://127.0.0.1:1 went away: run the same command again")
        await asyncio.gather(failing(), *(pending() for _ in range(4)))

    @click.command(cls=EmbCommand)
    def run():
        sync(batch())

    {debug}
    run()
''')


@pytest.mark.parametrize("debug", [False, True])
def test_pending_store_io_is_cancelled_and_the_error_is_one_line(debug):
    env_line = "import os; os.environ['EMB_DEBUG'] = '1'" if debug else ""
    proc = subprocess.run([sys.executable, "-c", SCRIPT.replace("{debug}", env_line)],
                          capture_output=True, text=True, timeout=60)
    assert proc.returncode == 1, proc.stderr
    lines = [line for line in proc.stderr.splitlines() if line.strip()]
    if debug:  # the error's own traceback, asked for; never the leftovers'
        assert lines[-1].startswith("Error: StoreError: the server"), proc.stderr
    else:
        assert lines == ["Error: StoreError: the server at http://127.0.0.1:1 went away: run the "
                         "same command again"], proc.stderr
    for noise in ("Exception ignored", "Task was destroyed", "different Context"):
        assert noise not in proc.stderr, proc.stderr


UNRETRIEVED = textwrap.dedent('''
    import asyncio, gc
    import click
    from emb.store._zarr import sync
    from emb.cli._errors import EmbCommand
    from emb.errors import StoreError

    async def write_bytes():  # aiohttp's writing task, its connection closed under it
        raise ConnectionResetError("Cannot write to closing transport")

    async def request():
        task = asyncio.ensure_future(write_bytes())
        await asyncio.sleep(0.05)
        del task  # done, its exception never retrieved: collected mid-run

    @click.command(cls=EmbCommand)
    def run():
        sync(request())
        gc.collect()  # asyncio logs "Task exception was never retrieved" here, while emb runs
        {end}

    {debug}
    run()
''')


@pytest.mark.parametrize("fails", [False, True])
def test_a_task_exception_never_retrieved_mid_run_prints_no_traceback(fails):
    """A task of the store's I/O whose exception nobody retrieves, collected while the run goes
    on (CI: aiohttp's write_bytes after the S3 server died): nothing of it on stderr, whether the
    run then fails with its one line or succeeds; with EMB_DEBUG, asyncio's own log is shown."""
    end = ('raise StoreError("cannot reach s3://b/x.zarr: run the same command again")' if fails
           else 'click.echo("done")')
    for debug in (False, True):
        script = UNRETRIEVED.replace("{end}", end).replace(
            "{debug}", "import os; os.environ['EMB_DEBUG'] = '1'" if debug else "")
        proc = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                              timeout=60)
        assert proc.returncode == (1 if fails else 0), proc.stderr
        if debug:  # asked for: asyncio's log is there, so the case above did make it
            assert "Task exception was never retrieved" in proc.stderr, proc.stderr
            continue
        lines = [line for line in proc.stderr.splitlines() if line.strip()]
        assert lines == (["Error: StoreError: cannot reach s3://b/x.zarr: run the same command "
                          "again"] if fails else []), proc.stderr
