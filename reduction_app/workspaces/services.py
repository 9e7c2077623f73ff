"""Writes of workspaces and API keys. Keys are stored as SHA-256 digests; authenticating
a key also records when it was last used (at most once a minute)."""

from __future__ import annotations

import hashlib
import secrets

from django.contrib.auth.models import User
from django.db.models import CharField
from django.utils import timezone
from django.utils.text import slugify

from reduction_app.errors import ServiceError
from reduction_app.models import ApiKey, Workspace

KEY_PREFIX = "rl_"
LAST_USED_RESOLUTION_SECONDS = 60


def _name_max_chars() -> int:
    """The width of a key's name column, as the model declares it."""
    field = ApiKey._meta.get_field("name")
    assert isinstance(field, CharField) and field.max_length is not None
    return field.max_length


KEY_NAME_MAX_CHARS = _name_max_chars()


def api_key_authenticate(*, raw_key: str) -> ApiKey | None:
    """The live key for ``raw_key``, with its last-used time refreshed (at most once a minute).

    No secret is compared here, so there is nothing to compare in constant time: the
    database looks the row up by the SHA-256 of the key sent. However long that lookup
    takes, it can tell an attacker only about the digest of what they sent, and a digest
    close to a stored one says nothing about a key (learning a stored digest byte by byte
    would still leave a preimage of SHA-256 to find, over a 256-bit random key). Revocation
    holds from the next request: nothing caches keys, every request reads the row.
    """
    key = (
        ApiKey.objects.select_related("workspace")
        .filter(digest=api_key_digest(raw_key), revoked_at__isnull=True)
        .first()
    )
    if key is None:
        return None
    now = timezone.now()
    if (
        key.last_used_at is None
        or (now - key.last_used_at).total_seconds() > LAST_USED_RESOLUTION_SECONDS
    ):
        ApiKey.objects.filter(pk=key.pk).update(last_used_at=now)
        key.last_used_at = now
    return key


def workspace_get_or_create(*, name: str, user: User | None = None) -> Workspace:
    slug = slugify(name) or "workspace"
    workspace, _ = Workspace.objects.get_or_create(slug=slug, defaults={"name": name})
    if user is not None:
        workspace.members.add(user)
    return workspace


def api_key_digest(raw_key: str) -> str:
    return hashlib.sha256(raw_key.encode("utf-8")).hexdigest()


def api_key_create(*, workspace: Workspace, name: str) -> tuple[ApiKey, str]:
    """A new key; the raw key is returned once and never stored. ``name`` (surrounding
    spaces dropped) must be given and fit :data:`KEY_NAME_MAX_CHARS`."""
    name = name.strip()
    if not name:
        raise ServiceError("give the key a name")
    if len(name) > KEY_NAME_MAX_CHARS:
        raise ServiceError(f"a key's name is at most {KEY_NAME_MAX_CHARS} characters")
    raw = KEY_PREFIX + secrets.token_urlsafe(32)
    key = ApiKey.objects.create(
        workspace=workspace, name=name, prefix=raw[:10], digest=api_key_digest(raw)
    )
    return key, raw


def api_key_revoke(*, key: ApiKey) -> ApiKey:
    if key.revoked_at is None:
        key.revoked_at = timezone.now()
        key.save(update_fields=["revoked_at"])
    return key


def workspace_retention_set(*, workspace: Workspace, days: int | None) -> Workspace:
    """Keep the workspace's records ``days`` days after their last write (``None``: for
    good); ``manage.py purge`` deletes the older ones."""
    if days is not None and days < 1:
        raise ServiceError(f"retention must be at least 1 day, not {days}")
    workspace.retention_days = days
    workspace.save(update_fields=["retention_days"])
    return workspace
