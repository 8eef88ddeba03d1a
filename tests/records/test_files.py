"""Writing a result file: a regular file whole or as it was; a device, FIFO or descriptor name in
place (never replaced by a regular file, as root too); a symbolic link through to its target. As
root (this machine's tests run as root) and, for permissions, as an unprivileged user in a
subprocess."""

import json
import os
import shutil
import stat
import subprocess
import sys
import tempfile
import textwrap
import threading

import pytest

from pipediag.errors import OutputError
from pipediag.records import files
from pipediag.records.files import resolve, write_text
from tests import unprivileged

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def _is_char_device(path) -> bool:
    return stat.S_ISCHR(os.lstat(path).st_mode)


def _temp_files(folder):
    return [p for p in os.listdir(folder) if p.startswith(".pipediag-")]


def test_dev_null_is_written_in_place_and_stays_a_device():
    assert _is_char_device("/dev/null")
    write_text("{}\n", "/dev/null")
    assert _is_char_device("/dev/null")
    assert _temp_files("/dev") == []


def test_dev_full_is_one_could_not_write_error_and_stays_a_device():
    assert _is_char_device("/dev/full")
    with pytest.raises(OutputError, match=r"could not write /dev/full: No space left on device") as raised:
        write_text("x" * 10_000, "/dev/full")
    assert raised.value.hint and raised.value.exit_code == 2
    assert _is_char_device("/dev/full")  # as root the rename would have put a regular file here
    assert _temp_files("/dev") == []


def test_a_device_node_in_a_writable_folder_is_not_replaced(tmp_path):
    """As root a rename succeeds wherever the folder is writable: a copy of /dev/full made with
    mknod in tmp_path is exactly the case that replaced /dev/full."""
    node = tmp_path / "full"
    try:
        os.mknod(node, stat.S_IFCHR | 0o666, os.stat("/dev/full").st_rdev)
    except PermissionError:
        pytest.skip("mknod of a character device needs CAP_MKNOD, which this process lacks")
    with pytest.raises(OutputError, match="No space left on device"):
        write_text("{}\n", str(node))
    assert _is_char_device(node) and _temp_files(tmp_path) == []


def test_a_fifo_is_written_to_its_reader_and_stays_a_fifo(tmp_path):
    fifo = tmp_path / "pipe"
    os.mknod(fifo, stat.S_IFIFO | 0o600)
    got = []
    reader = threading.Thread(target=lambda: got.append(fifo.read_text()), daemon=True)
    reader.start()
    write_text('{"a": 1}\n', str(fifo))  # opening waits for the reader, as `>` does
    reader.join(timeout=30)
    assert got == ['{"a": 1}\n']
    assert stat.S_ISFIFO(os.lstat(fifo).st_mode) and _temp_files(tmp_path) == []


def test_a_symlink_is_followed_and_its_target_written_atomically_in_the_targets_folder(tmp_path, monkeypatch):
    (tmp_path / "results").mkdir()
    (tmp_path / "links").mkdir()
    target = tmp_path / "results" / "run.json"
    target.write_text("old\n")
    link = tmp_path / "links" / "latest.json"
    link.symlink_to(os.path.join("..", "results", "run.json"))  # relative, as `ln -s` makes them
    folders = []
    real_mkstemp = files.tempfile.mkstemp

    def mkstemp(**kw):
        folders.append(kw["dir"])
        return real_mkstemp(**kw)

    monkeypatch.setattr(files.tempfile, "mkstemp", mkstemp)
    write_text("new\n", str(link))
    assert link.is_symlink() and os.readlink(link) == os.path.join("..", "results", "run.json")
    assert target.read_text() == "new\n" and not target.is_symlink()
    assert folders == [str(tmp_path / "results")]  # the rename stays inside the target's folder
    assert _temp_files(tmp_path / "results") == [] and _temp_files(tmp_path / "links") == []


def test_a_dangling_symlink_creates_its_target(tmp_path):
    link = tmp_path / "run.json"
    link.symlink_to(tmp_path / "out" / "real.json")
    write_text("{}\n", str(link))
    assert link.is_symlink() and (tmp_path / "out" / "real.json").read_text() == "{}\n"


def test_a_loop_of_links_is_one_could_not_write_error(tmp_path):
    (tmp_path / "a").symlink_to(tmp_path / "b")
    (tmp_path / "b").symlink_to(tmp_path / "a")
    with pytest.raises(OutputError, match="could not write .*a: Too many levels of symbolic links"):
        write_text("{}\n", str(tmp_path / "a"))


def test_dev_stdout_onto_a_regular_file_appends_through_the_descriptor(tmp_path):
    """`pipediag ... --json /dev/stdout > out.txt`: descriptor 1 is a regular file. Resolving the
    link to out.txt and renaming over it would drop what the report wrote there and leave the
    shell's descriptor on a deleted file. Written through /proc/self/fd/N instead."""
    out = tmp_path / "out.txt"
    with open(out, "w") as f:
        f.write("the report\n")
        f.flush()
        name = f"/proc/self/fd/{f.fileno()}"
        assert resolve(name) == (name, True)
        inode = os.fstat(f.fileno()).st_ino
        write_text('{"a": 1}\n', name)
    assert out.read_text() == 'the report\n{"a": 1}\n' and os.stat(out).st_ino == inode
    assert resolve("/dev/stdout")[1] and resolve("/dev/fd/1")[1]


def test_writing_over_a_file_keeps_its_mode(tmp_path):
    path = tmp_path / "run.json"
    path.write_text("old\n")
    path.chmod(0o640)
    write_text("new\n", str(path))
    assert stat.S_IMODE(path.stat().st_mode) == 0o640 and path.read_text() == "new\n"


# As an unprivileged user: what root is allowed and a user is not. The child gets its own world-
# readable folder (pytest's tmp_path lies under a 0700 folder of root's).
AS_USER = textwrap.dedent('''
    import json, os, sys
    from pipediag.errors import OutputError
    from pipediag.records.files import write_text
    folder = sys.argv[1]
    said = {}
    for name, path in [("full", "/dev/full"), ("null", "/dev/null"), ("read_only", folder + "/read_only.json"),
                       ("locked_folder", folder + "/locked/run.json"), ("fine", folder + "/open/run.json")]:
        try:
            write_text("{}\\n", path)
            said[name] = "ok"
        except OutputError as error:
            said[name] = error.message
    print(json.dumps(said))
''')


@pytest.fixture
def user_folder():
    unprivileged.skip_unless_possible()
    folder = tempfile.mkdtemp(prefix="pipediag-as-user-")
    os.chmod(folder, 0o755)
    yield folder
    shutil.rmtree(folder)


def _as_nobody(*args, **kw):
    return subprocess.run([*unprivileged.NOBODY, *args],
                          capture_output=True, text=True, timeout=120, **kw)


def test_permissions_as_an_unprivileged_user(user_folder):
    read_only = os.path.join(user_folder, "read_only.json")
    with open(read_only, "w") as f:
        f.write("kept\n")
    os.chmod(read_only, 0o444)
    os.chown(read_only, 65534, 65534)
    os.mkdir(os.path.join(user_folder, "locked"), 0o755)  # root's: not writable for nobody
    os.mkdir(os.path.join(user_folder, "open"))
    os.chmod(os.path.join(user_folder, "open"), 0o777)  # mkdir's mode is under the umask
    result = _as_nobody(sys.executable, "-c", AS_USER, user_folder, env=dict(os.environ, PYTHONPATH=ROOT), cwd="/")
    assert result.returncode == 0, result.stderr
    said = json.loads(result.stdout)
    assert said["full"] == "could not write /dev/full: No space left on device"
    assert said["null"] == "ok" and said["fine"] == "ok"
    assert said["read_only"].endswith("read_only.json: Permission denied")  # as `>` refuses it
    assert said["locked_folder"].endswith("locked/run.json: Permission denied")
    with open(read_only) as f:
        assert f.read() == "kept\n"
    assert _is_char_device("/dev/full") and _is_char_device("/dev/null")
    assert _temp_files(os.path.join(user_folder, "open")) == []
