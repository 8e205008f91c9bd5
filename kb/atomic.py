"""Write a file so that readers see the old content or the new, never half of either."""

from __future__ import annotations

import os
import shutil
import tempfile
from pathlib import Path


def default_mode() -> int:
    umask = os.umask(0)
    os.umask(umask)
    return 0o666 & ~umask


def atomic_write(target: Path, data: bytes, *, backup: Path | None = None) -> None:
    """Write ``data`` to a temporary file beside ``target``, fsync it, then ``os.replace`` it.

    An existing file keeps its permissions and, when ``backup`` is given, is copied there first.
    Raises ``OSError``; the temporary file never outlives a failure. Callers translate the error.
    """
    target = Path(target)
    tmp: str | None = None
    try:
        mode = target.stat().st_mode & 0o777 if target.exists() else default_mode()
        fd, tmp = tempfile.mkstemp(dir=target.parent, prefix=f".{target.name}.", suffix=".tmp")
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
            fh.flush()
            os.fsync(fh.fileno())
        os.chmod(tmp, mode)
        if backup is not None:
            shutil.copy2(target, backup)
        os.replace(tmp, target)
        tmp = None
        _fsync_dir(target.parent)
    finally:
        if tmp is not None:
            try:
                os.unlink(tmp)
            except OSError:
                pass


def atomic_create(target: Path, data: bytes) -> None:
    """Write ``data`` to ``target`` only if no file of that name exists, atomically.

    The data goes to a synced temporary file, which is then hard-linked into place: the link
    fails with ``FileExistsError`` when another process got there first (even a microsecond
    before), so two writers can never overwrite each other, and a reader never sees half a file.
    Where the filesystem has no hard links, ``O_CREAT | O_EXCL`` claims the name instead.
    """
    target = Path(target)
    fd, tmp = tempfile.mkstemp(dir=target.parent, prefix=f".{target.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
            fh.flush()
            os.fsync(fh.fileno())
        os.chmod(tmp, default_mode())
        try:
            os.link(tmp, target)
        except FileExistsError:
            raise
        except OSError:  # no hard links here (some network and FAT filesystems)
            _create_exclusive(target, data)
        _fsync_dir(target.parent)
    finally:
        try:
            os.unlink(tmp)
        except OSError:
            pass


def _create_exclusive(target: Path, data: bytes) -> None:
    fd = os.open(target, os.O_WRONLY | os.O_CREAT | os.O_EXCL, default_mode())
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
            fh.flush()
            os.fsync(fh.fileno())
    except BaseException:
        os.unlink(target)
        raise


def _fsync_dir(directory: Path) -> None:
    try:
        fd = os.open(directory, os.O_RDONLY)
    except OSError:
        return  # not every platform can open a directory; the file itself was synced
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)
