"""Whether the static files a server with DEBUG off needs are collected. With DEBUG off,
pages name static files by the hashed names in ``collectstatic``'s manifest, and a file
missing from it fails every page that names it with a 500; ``config/wsgi.py`` asks this
module first, so such a server refuses to start with a message saying what to run. (No
system check: ``migrate`` runs those, and a deploy migrates before it collects.)"""

from __future__ import annotations

import os

from django.conf import settings
from django.contrib.staticfiles.finders import get_finders
from django.contrib.staticfiles.storage import ManifestFilesMixin, staticfiles_storage

# collectstatic's own default ignore patterns: what it never collects.
_IGNORED = ["CVS", ".*", "*~"]


def static_files_problem() -> str | None:
    """What is wrong with the collected static files, or ``None`` when pages can name
    them all (or DEBUG is on, or the storage keeps no manifest)."""
    storage = staticfiles_storage
    if settings.DEBUG or not isinstance(storage, ManifestFilesMixin):
        return None
    run = "run `python manage.py collectstatic` (`make serve` does) before starting the server"
    manifest, _ = storage.load_manifest()
    if not manifest:
        return (
            f"DEBUG is off and the static files are not collected: {settings.STATIC_ROOT} "
            f"holds no {storage.manifest_name}; {run}"
        )
    missing = sorted(
        path for finder in get_finders() for path in _found(finder) if path not in manifest
    )
    if missing:
        return (
            f"DEBUG is off and {len(missing)} static files are missing from those collected "
            f"in {settings.STATIC_ROOT} (the first: {missing[0]}); {run}"
        )
    return None


def _found(finder: object) -> list[str]:
    """The paths ``finder`` gives collectstatic, as named in the manifest."""
    paths = []
    for path, storage in finder.list(_IGNORED):  # type: ignore[attr-defined]
        prefix = getattr(storage, "prefix", None)
        paths.append(os.path.join(prefix, path) if prefix else path)
    return [path.replace(os.sep, "/") for path in paths]
