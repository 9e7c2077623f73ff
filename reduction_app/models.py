"""What Reduction Lab records: workspaces and their keys, conversations, config
profiles, engine events (``EventRecord``, not to be confused with the engine's
``ReductionEvent`` value it records), offloaded files, and the task workers' ``Job``.

Every record belongs to one workspace, the unit of isolation. Models hold fields,
constraints and ``__str__``; writes live in the ``services`` and reads in the
``selectors`` of each noun's package.
"""

from __future__ import annotations

from typing import Final

from django.conf import settings
from django.core.validators import MinValueValidator
from django.db import models

from reduction_app.engine.formats import FORMATS, MAX_NAME_CHARS

OFFLOAD_PATH_CHARS = 500
"""The longest offload path (an ``OffloadedFile.path``); the storage backend takes no longer."""


class JobStatus(models.TextChoices):
    """Where a job (:class:`Job`) is: queued, then running, then done or failed."""

    QUEUED = "queued", "Queued"
    RUNNING = "running", "Running"
    DONE = "done", "Done"
    FAILED = "failed", "Failed"


UNFINISHED: Final = (JobStatus.QUEUED, JobStatus.RUNNING)
"""The statuses of a job that may still change."""
FINISHED: Final = (JobStatus.DONE, JobStatus.FAILED)
"""The statuses of a job that ended."""


class Job(models.Model):
    """Background work on the task workers, one row per job: an import, a simulation, a
    part of a sweep, a reclaim. ``reduction_app.jobs`` owns the lifecycle (the lease its
    worker holds, the heartbeat, the watcher that fails what stopped answering)."""

    status = models.CharField(max_length=10, choices=JobStatus.choices, default=JobStatus.QUEUED)
    worker = models.CharField(
        max_length=200, blank=True, help_text="host:pid of the worker holding its lease."
    )
    runs = models.PositiveIntegerField(
        default=0, help_text="Times a worker started it: 1 once done, unless retried."
    )
    progress_done = models.PositiveIntegerField(default=0)
    progress_total = models.PositiveIntegerField(default=0)
    error = models.TextField(blank=True)
    created_at = models.DateTimeField(auto_now_add=True)
    started_at = models.DateTimeField(null=True, blank=True)
    heartbeat_at = models.DateTimeField(
        null=True,
        blank=True,
        help_text="The running worker's last sign of life, written every sixth of the lease "
        "(REDUCTION_JOB_LEASE_SECONDS); older than the lease, its worker stopped answering.",
    )
    finished_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        abstract = True


class Workspace(models.Model):
    name = models.CharField(max_length=100)
    slug = models.SlugField(max_length=100, unique=True)
    members = models.ManyToManyField(
        settings.AUTH_USER_MODEL, related_name="workspaces", blank=True
    )
    retention_days = models.PositiveIntegerField(
        null=True,
        blank=True,
        validators=[MinValueValidator(1)],
        help_text="Days its records are kept after they were last written (manage.py purge); "
        "empty: kept forever.",
    )
    created_at = models.DateTimeField(auto_now_add=True)
    offload_bytes = models.PositiveBigIntegerField(
        default=0,
        help_text="Bytes of distinct offloaded content the workspace holds (kept by the "
        "services that record and delete files; workspaces.quotas).",
    )
    offload_quota_bytes = models.PositiveBigIntegerField(
        null=True,
        blank=True,
        help_text="Most bytes of offloaded content the workspace may hold: empty for "
        "REDUCTION_QUOTA_OFFLOAD_BYTES, 0 for no limit.",
    )
    rate_limit_per_minute = models.PositiveIntegerField(
        null=True,
        blank=True,
        help_text="Most REST API requests a minute: empty for REDUCTION_RATE_LIMIT, "
        "0 for no limit.",
    )

    class Meta:
        ordering = ("slug",)

    def __str__(self) -> str:
        return self.slug


class ApiKey(models.Model):
    """A bearer key for the REST API. Only a SHA-256 digest of the key is stored."""

    workspace = models.ForeignKey(Workspace, on_delete=models.CASCADE, related_name="api_keys")
    name = models.CharField(max_length=100)
    prefix = models.CharField(
        max_length=16, help_text="The key's first characters, to recognise it."
    )
    digest = models.CharField(max_length=64, unique=True)
    created_at = models.DateTimeField(auto_now_add=True)
    last_used_at = models.DateTimeField(null=True, blank=True)
    revoked_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ("-created_at", "-id")

    def __str__(self) -> str:
        return f"{self.name} ({self.prefix}…)"


class Conversation(models.Model):
    """A conversation as a client sent it, keyed by the client's own id."""

    # From the format registry; a new format there is a new choice here (and a migration).
    FORMAT_CHOICES = tuple((f.name, f.label) for f in FORMATS.values())

    workspace = models.ForeignKey(Workspace, on_delete=models.CASCADE, related_name="conversations")
    client_id = models.CharField(max_length=200)
    title = models.CharField(max_length=300, blank=True)
    message_format = models.CharField(max_length=20, choices=FORMAT_CHOICES, default="openai_chat")
    message_count = models.PositiveIntegerField(
        default=0, help_text="Messages of the transcript, held one a row in TranscriptMessage."
    )
    system = models.JSONField(
        null=True, blank=True, help_text="Anthropic only: the top-level system parameter."
    )
    tools = models.JSONField(default=list, blank=True)
    source = models.CharField(
        max_length=40,
        blank=True,
        help_text="The recording format it was imported from (e.g. swe_agent); empty for "
        "conversations a client recorded.",
    )
    imported_from = models.CharField(
        max_length=300, blank=True, help_text="The name of the file it was imported from."
    )
    provider_usage = models.JSONField(
        null=True,
        blank=True,
        help_text="What the provider reported of the recorded run (per-call prompt tokens "
        "keyed by message index, ...), as simulator.recording.ProviderUsage.to_json gives "
        "it; empty when the recording kept none, and for conversations a client recorded.",
    )
    omits = models.JSONField(
        null=True,
        blank=True,
        help_text="What the recording left out of what the model was sent (the system prompt, "
        "...), as simulator.importers.recording_omits said on import: an empty list when it "
        "left out nothing; null for conversations a client recorded, and those imported "
        "before the app kept it.",
    )
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ("-updated_at", "-id")
        constraints = (
            models.UniqueConstraint(
                fields=["workspace", "client_id"], name="conversation_client_id_unique"
            ),
        )

    def __str__(self) -> str:
        return self.title or self.client_id


class TranscriptMessage(models.Model):
    """One message of a conversation's transcript as received, for replay.

    A client sends its whole context on every call, and mostly the same messages as the
    last time: held a message a row, a call writes only the messages that are new or
    changed (``digest`` tells which), not the whole transcript again.

    ``data`` is JSON text with every non-ASCII character escaped, not a ``JSONField``: a
    tool may print bytes that are not UTF-8, which reach us as lone surrogates (``\\udcff``),
    and PostgreSQL's ``jsonb`` refuses those where an escaped text keeps them."""

    conversation = models.ForeignKey(
        Conversation, on_delete=models.CASCADE, related_name="transcript_messages"
    )
    position = models.PositiveIntegerField()
    digest = models.CharField(
        max_length=64, help_text="SHA-256 of the message's JSON values (services.message_digest)."
    )
    data = models.TextField(
        help_text="The message as JSON, in the conversation's wire format (ASCII, see below)."
    )

    class Meta:
        ordering = ("conversation", "position")
        constraints = (
            models.UniqueConstraint(
                fields=["conversation", "position"], name="transcript_message_position_unique"
            ),
        )

    def __str__(self) -> str:
        return f"{self.conversation_id}:{self.position}"


class ContextRevision(models.Model):
    """One answer of ``/clear`` to a conversation: where the client's context stood after
    it, which a client that sends only its new messages (``previous_revision``) continues.

    The context after the call is what the call sent up to ``from_index``, then ``tail``.
    For the latest revision, what it sent is the stored transcript. For a call that
    continued the one before (``continued``), ``from_index`` is within that revision's
    context, so a process holding an earlier context catches up by applying each later
    revision's ``from_index`` and ``tail`` in turn. The last few revisions are kept
    (``KEPT``); any other than the latest is stale for a client."""

    KEPT = 16
    """The revisions kept per conversation: a process whose warm context is older than
    these rebuilds it from the transcript."""

    conversation = models.ForeignKey(
        Conversation, on_delete=models.CASCADE, related_name="context_revisions"
    )
    revision = models.PositiveBigIntegerField(
        help_text="Counts the calls that answered this conversation's context from 1; the "
        "client sends the last one it got back as previous_revision."
    )
    from_index = models.PositiveIntegerField(
        help_text="The first message of what the call sent that its answer changed (or the "
        "length of the context it continued, when it changed none of it)."
    )
    tail = models.TextField(
        help_text="The context's messages from from_index on, as a JSON list in the "
        "conversation's wire format (ASCII, as TranscriptMessage.data)."
    )
    continued = models.BooleanField(
        help_text="The call continued the revision before it (sent previous_revision), so "
        "from_index is a position of that revision's context."
    )

    class Meta:
        ordering = ("conversation", "revision")
        constraints = (
            models.UniqueConstraint(
                fields=["conversation", "revision"], name="context_revision_unique"
            ),
        )

    def __str__(self) -> str:
        return f"{self.conversation_id}@{self.revision}"


class RecordingImport(Job):
    """Recordings imported into a workspace as conversations: at once in the request when
    small, else by the task workers, which report progress here (files read of files)."""

    workspace = models.ForeignKey(Workspace, on_delete=models.CASCADE, related_name="imports")
    format = models.CharField(
        max_length=40, blank=True, help_text="The format asked for; empty: detected per file."
    )
    replace = models.BooleanField(
        default=False, help_text="Whether conversations with the same ids are replaced."
    )
    result = models.JSONField(
        null=True, blank=True, help_text="Per file: its format and the conversations made."
    )

    class Meta:
        ordering = ("-created_at", "-id")

    def __str__(self) -> str:
        return f"import #{self.pk} ({self.status})"


class RecordingUpload(models.Model):
    """A file of a :class:`RecordingImport` waiting for the task worker (the web and
    worker processes share the database, not a disk); deleted once the import ends."""

    recording_import = models.ForeignKey(
        RecordingImport, on_delete=models.CASCADE, related_name="uploads"
    )
    position = models.PositiveIntegerField()
    filename = models.CharField(max_length=300)
    content = models.BinaryField()

    class Meta:
        ordering = ("recording_import", "position")
        constraints = (
            models.UniqueConstraint(
                fields=["recording_import", "position"], name="recording_upload_position_unique"
            ),
        )

    def __str__(self) -> str:
        return self.filename


class ConfigProfile(models.Model):
    """A named engine config; editing it adds a :class:`ConfigVersion`."""

    workspace = models.ForeignKey(Workspace, on_delete=models.CASCADE, related_name="configs")
    name = models.CharField(max_length=100)
    created_at = models.DateTimeField(auto_now_add=True)
    deleted_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ("name", "id")
        constraints = (
            models.UniqueConstraint(
                fields=["workspace", "name"],
                condition=models.Q(deleted_at__isnull=True),
                name="config_name_unique_live",
            ),
        )

    def __str__(self) -> str:
        return self.name


class WorkspacePrice(models.Model):
    """A workspace's own price for the simulator: its JSON form, as ``--pricing FILE``
    reads it (``simulator.price_file``), written out in full by ``prices.services``.
    Simulations keep a copy of the values they ran with, so editing or deleting a price
    rewrites no stored result."""

    workspace = models.ForeignKey(Workspace, on_delete=models.CASCADE, related_name="prices")
    name = models.CharField(max_length=64)
    data = models.JSONField(help_text="The price's JSON form, name included.")
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ("name",)
        constraints = (
            models.UniqueConstraint(fields=["workspace", "name"], name="price_name_unique"),
        )

    def __str__(self) -> str:
        return self.name


class ConfigVersion(models.Model):
    """One validated version of a profile: the JSON fields of ``ReductionConfig``."""

    profile = models.ForeignKey(ConfigProfile, on_delete=models.CASCADE, related_name="versions")
    number = models.PositiveIntegerField()
    data = models.JSONField()
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ("-number",)
        constraints = (
            models.UniqueConstraint(fields=["profile", "number"], name="config_version_unique"),
        )

    def __str__(self) -> str:
        return f"{self.profile.name} v{self.number}"


class OffloadedFile(models.Model):
    """Content the engine moved out of a conversation; the text is in ``storage_name``.

    A row is one conversation's file at one path (or, with no conversation, a request's
    that named none). The engine keeps a path to one content in the whole workspace, and
    two conversations may name the same path (both cleared call ``call_1`` with the same
    output): each then has a row of its own, naming the same stored content, which is
    stored once. A conversation thus lists, reads and deletes its own rows only, and the
    content stays while any row names it.
    """

    workspace = models.ForeignKey(Workspace, on_delete=models.CASCADE, related_name="files")
    conversation = models.ForeignKey(
        Conversation, on_delete=models.CASCADE, related_name="files", null=True, blank=True
    )
    path = models.CharField(max_length=OFFLOAD_PATH_CHARS)
    storage_name = models.CharField(max_length=500)
    size_chars = models.PositiveBigIntegerField()
    size_bytes = models.PositiveBigIntegerField(
        default=0, help_text="Size of the stored content (UTF-8), counted by the offload quota."
    )
    tokens = models.PositiveBigIntegerField()
    sha256 = models.CharField(max_length=64)
    phase = models.CharField(max_length=20)
    tool_name = models.CharField(max_length=MAX_NAME_CHARS, blank=True)
    call_id = models.CharField(max_length=MAX_NAME_CHARS, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)
    read_count = models.PositiveIntegerField(default=0)
    last_read_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ("-created_at", "-id")
        constraints = (
            models.UniqueConstraint(
                fields=["workspace", "conversation", "path"],
                condition=models.Q(conversation__isnull=False),
                name="file_path_unique_in_conversation",
            ),
            # NULLs are distinct in a unique index: files of no conversation need their own.
            models.UniqueConstraint(
                fields=["workspace", "path"],
                condition=models.Q(conversation__isnull=True),
                name="file_path_unique_loose",
            ),
        )
        indexes = (
            models.Index(fields=["workspace", "conversation"]),
            # A path's rows in every conversation: what the engine checks a path against.
            models.Index(fields=["workspace", "path"], name="file_path"),
            # Whether a workspace holds a content already, and the sizes of what it holds,
            # read from the index alone (workspaces.quotas).
            models.Index(fields=["workspace", "storage_name", "size_bytes"], name="file_quota"),
        )

    def __str__(self) -> str:
        return self.path


class StagedOffload(models.Model):
    """Content a request is about to store, written (and committed) before it is stored.

    A request journals every content it will name (``records.storage``), stores what is
    not stored yet, and deletes its journal rows in the transaction that records its file
    rows; a request that fails removes what it stored and its rows. Rows left behind
    belong to a request that died (a killed worker, a lost database connection): their
    content is counted by the offload quota until ``manage.py offload_reclaim`` (or the
    task worker) removes it, once the rows are older than ``REDUCTION_STAGED_DEAD_SECONDS``.
    """

    workspace = models.ForeignKey(Workspace, on_delete=models.CASCADE, related_name="staged")
    request = models.UUIDField(help_text="The request that staged it.")
    storage_name = models.CharField(max_length=500)
    size_bytes = models.PositiveBigIntegerField()
    staged_at = models.DateTimeField()

    class Meta:
        indexes = (
            models.Index(fields=["workspace", "storage_name"], name="staged_name"),
            models.Index(fields=["request"], name="staged_request"),
            models.Index(fields=["staged_at"], name="staged_at"),
        )

    def __str__(self) -> str:
        return self.storage_name


class RateWindow(models.Model):
    """A workspace's REST API requests in the current minute, for ``REDUCTION_RATE_LIMIT``.

    One row a workspace, rewritten in place by one upsert a request
    (``workspaces.rates``), so the count holds across web workers and machines."""

    workspace = models.OneToOneField(
        Workspace, on_delete=models.CASCADE, primary_key=True, related_name="rate_window"
    )
    minute = models.BigIntegerField(help_text="Minutes since the epoch, UTC.")
    count = models.PositiveIntegerField()

    def __str__(self) -> str:
        return f"{self.workspace_id}: {self.count} in minute {self.minute}"


class EventRecord(models.Model):
    """One engine event as recorded: a truncation, a cleared call, or a clear pass's
    summary. Its fields are those of the engine's ``ReductionEvent`` value, name by name,
    plus :attr:`RECORD_FIELDS` (a test holds the two together; ``records.schemas.EventOut``
    is built from these fields)."""

    RECORD_FIELDS = (
        "id",
        "workspace",
        "conversation",
        "config_version",
        "created_at",
        "reduction_key",
    )
    """Where and when the event was recorded, and what it reduced: fields of the row, not
    of the event."""

    workspace = models.ForeignKey(Workspace, on_delete=models.CASCADE, related_name="events")
    conversation = models.ForeignKey(
        Conversation, on_delete=models.CASCADE, related_name="events", null=True, blank=True
    )
    config_version = models.ForeignKey(
        ConfigVersion, on_delete=models.SET_NULL, related_name="events", null=True, blank=True
    )
    phase = models.CharField(max_length=20)
    kind = models.CharField(max_length=20)
    tool_name = models.CharField(max_length=MAX_NAME_CHARS, blank=True)
    call_id = models.CharField(max_length=MAX_NAME_CHARS, blank=True)
    chars_before = models.BigIntegerField(default=0)
    chars_after = models.BigIntegerField(default=0)
    tokens_before = models.BigIntegerField(default=0)
    tokens_after = models.BigIntegerField(default=0)
    tokens_saved = models.BigIntegerField(default=0)
    offload_path = models.CharField(max_length=500, blank=True)
    streamed = models.BooleanField(default=False)
    applied = models.BooleanField(default=False)
    calls_cleared = models.IntegerField(default=0)
    reason = models.CharField(max_length=40, blank=True)
    threshold = models.BigIntegerField(default=0)
    strategy = models.CharField(max_length=40, blank=True)
    created_at = models.DateTimeField(auto_now_add=True, db_index=True)
    reduction_key = models.CharField(
        max_length=64,
        null=True,
        blank=True,
        help_text=(
            "For a conversation's tool event that offloaded: a digest of its phase, call "
            "id, offload path, offloaded content and its rank among the request's events "
            "alike, so a conversation sent again records each reduction once "
            "(reductions.services)."
        ),
    )

    class Meta:
        ordering = ("-created_at", "-id")
        constraints = (
            # NULLs are distinct in a unique index: events of no conversation, and events
            # with no key (summaries, reductions that offloaded nothing), never clash. It
            # also serves the one query that finds a request's keys already recorded.
            models.UniqueConstraint(
                fields=["conversation", "reduction_key"], name="event_reduction_unique"
            ),
        )
        indexes = (
            models.Index(fields=["workspace", "conversation", "created_at"]),
            models.Index(fields=["workspace", "phase", "tool_name"]),
        )

    def __str__(self) -> str:
        return f"{self.phase}/{self.kind} {self.tool_name} {self.call_id}".strip()


class Simulation(Job):
    """A replay or a sweep of recorded conversations, or a search for the config to
    recommend over them, and what it measured. A sweep of one conversation on the task
    workers runs as :class:`SimulationPart` jobs: its own row then has no heartbeat."""

    KIND_CHOICES = (
        ("replay", "Replay and compare"),
        ("sweep", "Sweep a grid"),
        ("recommend", "Recommend a config"),
    )

    workspace = models.ForeignKey(Workspace, on_delete=models.CASCADE, related_name="simulations")
    conversation = models.ForeignKey(
        Conversation,
        on_delete=models.CASCADE,
        related_name="simulations",
        help_text="The conversation replayed; of several, the first.",
    )
    conversations = models.ManyToManyField(
        Conversation,
        blank=True,
        related_name="simulations_over",
        help_text="Every conversation swept or searched over, when there are several "
        "(from the Sweep page); empty for one.",
    )
    kind = models.CharField(max_length=10, choices=KIND_CHOICES, default="replay")
    configs = models.JSONField(default=list, blank=True, help_text="[{name, config}] to compare.")
    grid = models.JSONField(null=True, blank=True, help_text="Sweeps: knob -> list of values.")
    options = models.JSONField(default=dict, blank=True, help_text="baseline, pricing, prefix.")
    results = models.JSONField(null=True, blank=True)

    class Meta:
        ordering = ("-created_at", "-id")

    def __str__(self) -> str:
        return f"{self.kind} #{self.pk} of {self.conversation}"


class SimulationPart(Job):
    """One combination of a sweep run on the task workers, each replayed by a task of its
    own; the last part to finish gathers them into the sweep's results. A part whose
    worker stopped answering is queued again, up to ``REDUCTION_SWEEP_MAX_RUNS`` runs."""

    simulation = models.ForeignKey(Simulation, on_delete=models.CASCADE, related_name="parts")
    position = models.PositiveIntegerField(
        help_text="The combination's place in the grid; the no-reduction baseline is last."
    )
    name = models.TextField(help_text="The combination, as knob=value pairs.")
    config = models.JSONField(null=True, blank=True, help_text="None: no reduction.")
    requeued_after = models.JSONField(
        default=list,
        blank=True,
        help_text="host:pid of each worker that stopped answering while it ran this part, "
        "after which the part was queued again; oldest first.",
    )
    result = models.JSONField(null=True, blank=True, help_text="The replay's totals.")

    class Meta:
        ordering = ("simulation", "position")
        constraints = (
            models.UniqueConstraint(
                fields=["simulation", "position"], name="simulation_part_position_unique"
            ),
        )
        # The look for abandoned parts, taken at every part a worker runs and every view
        # of a running sweep, reads only the few parts running.
        indexes = (
            models.Index(
                fields=["heartbeat_at"],
                condition=models.Q(status="running"),
                name="simulation_part_running",
            ),
        )

    def __str__(self) -> str:
        return f"part {self.position} of simulation {self.simulation_id}: {self.name}"


class ReclaimRun(Job):
    """One run of the reclaim of what requests that died left in the offload storage
    (``records.reclaim``), over every workspace that holds any."""

    removed_bytes = models.PositiveBigIntegerField(
        default=0, help_text="Bytes of stored content it removed."
    )

    class Meta:
        ordering = ("-created_at", "-id")

    def __str__(self) -> str:
        return f"reclaim #{self.pk} ({self.status})"


class TelemetryRecord(models.Model):
    """What an agent's OpenTelemetry exporter sent to ``/api/v1/otel``, one span or log
    record a row, kept as received (OTLP/JSON of its resource, scope and itself), from
    which the workspace's traced conversations are rebuilt (``telemetry.services``).

    A span is stored once however often it is sent (retries, overlapping batches): its
    ``key`` is its trace and span id; a log record's is a digest of what it holds."""

    KINDS = (("span", "span"), ("log", "log record"))

    workspace = models.ForeignKey(
        Workspace, on_delete=models.CASCADE, related_name="telemetry_records"
    )
    kind = models.CharField(max_length=4, choices=KINDS)
    key = models.CharField(
        max_length=64, help_text="A span's trace and span id; a log record's SHA-256."
    )
    trace_id = models.CharField(max_length=32)
    group = models.CharField(
        max_length=300,
        blank=True,
        help_text="The conversations it belongs to (TelemetryGroup.key); empty until its "
        "trace is read.",
    )
    pending = models.BooleanField(default=True, help_text="Received since its trace was last read.")
    data = models.TextField(help_text="OTLP/JSON of the record, its resource and its scope.")
    received_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ("id",)
        constraints = (
            models.UniqueConstraint(
                fields=["workspace", "kind", "key"], name="telemetry_record_unique"
            ),
        )
        indexes = (
            models.Index(fields=["workspace", "pending"]),
            models.Index(fields=["workspace", "trace_id"]),
            models.Index(fields=["workspace", "group"]),
        )

    def __str__(self) -> str:
        return f"{self.kind} {self.key}"


class TelemetryGroup(models.Model):
    """Traces read together: those of one session (its id), or those whose calls may
    continue each other (the same opening messages). Each rebuild of a group replaces
    the conversations it made before."""

    workspace = models.ForeignKey(
        Workspace, on_delete=models.CASCADE, related_name="telemetry_groups"
    )
    key = models.CharField(max_length=300)
    conversations = models.JSONField(
        default=list, blank=True, help_text="The ids of the conversations it made."
    )
    error = models.TextField(
        blank=True, help_text="Why its traces could not be read, the last time they were."
    )
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ("-updated_at", "-id")
        constraints = (
            models.UniqueConstraint(fields=["workspace", "key"], name="telemetry_group_unique"),
        )

    def __str__(self) -> str:
        return self.key
