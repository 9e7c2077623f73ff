"""Recording the demo agent's conversations, and importing the shared recordings.

:func:`record_live` records a run through the engine, as the REST API's ``/truncate``
and ``/clear`` record one; :func:`record_plain` records the agent's raw transcript (no
engine, no events); :func:`import_recordings` imports OpenHands and tau-bench runs of the
recordings folder for replay, as a person imports them on the Import page.
"""

from __future__ import annotations

import json
import random
import time
from collections.abc import Callable, Iterable
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

from django.db import transaction

from reduction_app import engine
from reduction_app.conversations.imports import recording_id, recording_import_inline
from reduction_app.conversations.services import conversation_upsert
from reduction_app.demo.specs import (
    OPENHANDS,
    OPENHANDS_DAYS_AGO,
    SYSTEM_PROMPT,
    TAU_BENCH,
    TAU_BENCH_RUNS,
    LiveSpec,
)
from reduction_app.engine import Message, ToolCall, formats
from reduction_app.models import ConfigVersion, Conversation, EventRecord, OffloadedFile, Workspace
from reduction_app.records.storage import offload_storage
from reduction_app.reductions.services import engine_session, engine_session_record
from simulator.corpus import TOOLS_OPENAI, AgentHooks, ScriptedAgent, SourceTree
from simulator.importers import RecordedConversation

__all__ = ["import_recordings", "record_live", "record_plain"]


class _Clock:
    """Simulated time of one conversation: a model call takes seconds, a tool less.

    A conversation starts a fixed number of days before the seeding, and each call takes
    a few seconds drawn from the conversation's own seed.
    """

    def __init__(self, start: datetime, seed: int) -> None:
        self.now = start
        self.rng = random.Random(seed)

    def model_call(self) -> datetime:
        self.now += timedelta(seconds=round(self.rng.uniform(3.0, 24.0), 3))
        return self.now

    def tool_call(self) -> datetime:
        self.now += timedelta(seconds=round(self.rng.uniform(0.2, 3.0), 3))
        return self.now


class _Recorder(AgentHooks):
    """The agent's hooks: each call through the engine and recorded, as over the REST API.

    Every tool result goes through the truncation phase and every model call through the
    clear phase, one ``reductions.services.engine_session`` each, recorded with
    ``engine_session_record`` under the conversation's id.
    """

    def __init__(
        self, workspace: Workspace, version: ConfigVersion, client_id: str, clock: _Clock
    ) -> None:
        self.workspace = workspace
        self.version = version
        self.client_id = client_id
        self.clock = clock
        self.tools = json.loads(json.dumps(TOOLS_OPENAI))
        self.tool_infos = formats.tools_from_openai(self.tools)
        self.model_calls = self.tool_calls = self.truncations = self.cleared = 0
        self.tokens_saved = 0
        self.stored: list[str] = []
        """Storage names this conversation's sessions created (to remove on failure)."""
        self._dated: set[str] = set()

    def before_model(self, messages: list[Message]) -> list[Message]:
        when = self.clock.model_call()
        with engine_session(
            workspace=self.workspace,
            config_data=None,
            config_version=self.version,
            conversation_id=self.client_id,
        ) as session:
            state = engine.ChatModelAgentState(messages=messages, tool_infos=self.tool_infos)
            new_state = session.middleware.before_model_rewrite_state(state)
            rows = engine_session_record(
                session=session,
                conversation_id=self.client_id,
                message_format="openai_chat",
                transcript=formats.messages_to_openai(messages),
                tools=self.tools,
            )
        self.model_calls += 1
        self._date(session, rows, when)
        # Chat messages in, chat messages out: the clear phase keeps the message style.
        return [m for m in new_state.messages if isinstance(m, Message)]

    def run_tool(self, call: ToolCall, tool: Callable[[str], str]) -> str:
        when = self.clock.tool_call()
        ctx = engine.ToolContext(name=call.name, call_id=call.id)
        with engine_session(
            workspace=self.workspace,
            config_data=None,
            config_version=self.version,
            conversation_id=self.client_id,
        ) as session:
            output = session.middleware.wrap_invokable_tool_call(tool, ctx)(call.arguments)
            rows = engine_session_record(session=session, conversation_id=self.client_id)
        self.tool_calls += 1
        self._date(session, rows, when)
        return output

    def _date(self, session: Any, rows: list[EventRecord], when: datetime) -> None:
        for event in session.events:
            if event.kind != "tool":
                continue
            self.tokens_saved += event.tokens_saved
            if event.phase == "truncation":
                self.truncations += 1
            else:
                self.cleared += 1
        ids = [row.pk for row in rows]
        if rows and None in ids:  # a database that cannot return ids from a bulk insert
            ids = list(
                EventRecord.objects.filter(workspace=self.workspace)
                .order_by("-id")
                .values_list("id", flat=True)[: len(rows)]
            )
        if ids:
            EventRecord.objects.filter(pk__in=ids).update(created_at=when)
        fresh = [path for path in session.backend.staged if path not in self._dated]
        if fresh:
            OffloadedFile.objects.filter(
                workspace=self.workspace, path__in=fresh, conversation__client_id=self.client_id
            ).update(created_at=when)
            self._dated.update(fresh)
        self.stored += [s.storage_name for s in session.backend.staged.values() if s.created]


def record_live(
    workspace: Workspace, spec: LiveSpec, version: ConfigVersion, tree: SourceTree, anchor: datetime
) -> str:
    """Run the agent through the engine and record it; all of it or, on failure, nothing."""
    started = time.perf_counter()
    begin = anchor - timedelta(days=spec.days_ago)
    recorder = _Recorder(workspace, version, spec.client_id, _Clock(begin, spec.seed))
    agent = ScriptedAgent(
        tree=tree,
        rng=random.Random(spec.seed),
        hooks=recorder,
        call_prefix=f"call_{spec.client_id.removeprefix('demo-')}_",
    )
    agent.add(Message.system(SYSTEM_PROMPT))
    try:
        with transaction.atomic():
            conversation = conversation_upsert(
                workspace=workspace,
                client_id=spec.client_id,
                message_format="openai_chat",
                title=spec.title,
            )
            for task in spec.tasks:
                agent.run_task(task)
            # The finished transcript, answer included, as a client records it at the end.
            conversation_upsert(
                workspace=workspace,
                client_id=spec.client_id,
                message_format="openai_chat",
                transcript=formats.messages_to_openai(agent.messages),
                tools=recorder.tools,
            )
            Conversation.objects.filter(pk=conversation.pk).update(
                created_at=begin, updated_at=recorder.clock.now
            )
    except BaseException:
        _remove_unused(recorder.stored)
        raise
    files = OffloadedFile.objects.filter(conversation=conversation).count()
    return (
        f"{len(agent.messages)} messages, {recorder.model_calls} model calls, "
        f"{recorder.tool_calls} tool calls; {recorder.truncations} truncated, "
        f"{recorder.cleared} cleared, {files} files, "
        f"{recorder.tokens_saved:,} tokens saved ({time.perf_counter() - started:.1f} s)"
    )


def record_plain(workspace: Workspace, spec: LiveSpec, tree: SourceTree, anchor: datetime) -> str:
    """Run the agent with no engine and record its whole transcript, as a client records a
    finished conversation (``POST /api/v1/conversations``)."""
    started = time.perf_counter()
    agent = ScriptedAgent(
        tree=tree,
        rng=random.Random(spec.seed),
        call_prefix=f"call_{spec.client_id.removeprefix('demo-')}_",
    )
    agent.add(Message.system(SYSTEM_PROMPT))
    for task in spec.tasks:
        agent.run_task(task)
    clock = _Clock(anchor - timedelta(days=spec.days_ago), spec.seed)
    begin = clock.now
    for message in agent.messages:
        if message.role == "assistant":
            clock.model_call()
        elif message.role == "tool":
            clock.tool_call()
    with transaction.atomic():
        conversation = conversation_upsert(
            workspace=workspace,
            client_id=spec.client_id,
            message_format="openai_chat",
            transcript=formats.messages_to_openai(agent.messages),
            tools=json.loads(json.dumps(TOOLS_OPENAI)),
            title=spec.title,
        )
        Conversation.objects.filter(pk=conversation.pk).update(
            created_at=begin, updated_at=clock.now
        )
    return (
        f"{len(agent.messages)} messages, {agent.chars:,} characters "
        f"({time.perf_counter() - started:.1f} s)"
    )


def _remove_unused(names: Iterable[str]) -> None:
    storage = offload_storage()
    for name in set(names):
        if not OffloadedFile.objects.filter(storage_name=name).exists():
            storage.delete(name)


def import_recordings(
    workspace: Workspace, folder: Path, anchor: datetime, existing: set[str], small: bool
) -> list[tuple[str, str, str | None]]:
    """Import OpenHands and tau-bench runs of ``folder`` as a person imports recordings
    (one :class:`~reduction_app.models.RecordingImport`, the same ids, titles and
    formats), dated days back. Returns each one's source (``OpenHands``, ``tau-bench``)
    and conversation id with a summary line, or ``None`` when it was there already
    (under its id, or the id seeding gave it before seeding imported recordings)."""
    sources = {OPENHANDS: "OpenHands", TAU_BENCH: "tau-bench"}
    tau_runs = {
        f"task {t}, trial {r}": days for t, r, days in TAU_BENCH_RUNS[: 1 if small else None]
    }
    openhands_days = list(OPENHANDS_DAYS_AGO[: 1 if small else None])
    # Days back of each recording picked, by its name, in the order they are picked (the
    # order of the import's result).
    days: dict[str, float] = {}
    out: list[tuple[str, str, str | None]] = []
    openhands_seen = [0]

    def pick(filename: str, recorded: RecordedConversation) -> bool:
        if filename == OPENHANDS:
            if openhands_seen[0] >= len(openhands_days):
                return False
            when = openhands_days[openhands_seen[0]]
            openhands_seen[0] += 1
            legacy = f"openhands-{recorded.task}"
        elif recorded.task in tau_runs:
            when = tau_runs[recorded.task]
            task, trial = recorded.task.removeprefix("task ").split(", trial ")
            legacy = f"tau-bench-airline-task{task}-trial{trial}"
        else:
            return False
        client_id = recording_id(recorded, filename)
        kept = next((c for c in (client_id, legacy) if c in existing), None)
        if kept is not None:
            out.append((sources[filename], kept, None))
            return False
        days[recorded.name] = when
        return True

    files = [(name, (folder / name).read_bytes()) for name in sources]
    job = recording_import_inline(
        workspace=workspace, files=files, fmt=None, replace=False, pick=pick
    )
    if not days:  # everything was there already: no import to record
        job.delete()
        return out
    backdated = iter(days.values())
    for item in job.result or []:
        for made in item["conversations"]:
            begin = anchor - timedelta(days=next(backdated))
            rows = Conversation.objects.filter(
                workspace=workspace, client_id=made["conversation_id"]
            )
            rows.update(
                created_at=begin,
                updated_at=begin + timedelta(minutes=made["message_count"] // 2 + 1),
            )
            tools = len(rows.values_list("tools", flat=True).get())
            line = f"{made['message_count']} messages, {tools} tool schemas"
            out.append((sources[item["filename"]], made["conversation_id"], line))
    return out
