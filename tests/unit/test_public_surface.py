"""The one documented public surface (``lanes``, ``lanes.aio``, ``lanes.errors``) and the earlier
import paths kept for users' code."""

from __future__ import annotations

import subprocess
import sys

import lanes
import lanes.aio
import lanes.errors


def test_every_public_name_resolves() -> None:
    for name in lanes.__all__:
        assert getattr(lanes, name) is not None, name
    assert set(lanes.__all__) <= set(dir(lanes))
    assert {"Admin", "Consumer", "Producer"} <= set(lanes.aio.__all__)


def test_importing_lanes_or_a_pure_core_does_not_load_grpc() -> None:
    code = "import sys, lanes, lanes.errors, lanes.protocol.records; print('grpc' in sys.modules)"
    loaded = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert loaded.strip() == "False"


def test_earlier_import_paths_still_work() -> None:
    from lanes.client import Admin, Consumer, Producer, TopicPartition  # noqa: PLC0415
    from lanes.client.consumer import TopicPartition as ConsumerTopicPartition  # noqa: PLC0415
    from lanes.protocol.errors import ErrorCode, LanesError, NotLeaderError  # noqa: PLC0415

    assert (Admin, Consumer, Producer) == (lanes.Admin, lanes.Consumer, lanes.Producer)
    assert TopicPartition is ConsumerTopicPartition is lanes.TopicPartition
    assert LanesError is lanes.errors.LanesError
    assert NotLeaderError is lanes.errors.NotLeaderError
    assert ErrorCode is lanes.errors.ErrorCode


def test_a_topic_partition_is_the_plain_pair_it_names() -> None:
    tp = lanes.TopicPartition("orders", 3)
    assert tp == ("orders", 3)
    assert hash(tp) == hash(("orders", 3))
    assert sorted([lanes.TopicPartition("b", 0), lanes.TopicPartition("a", 2)])[0].topic == "a"


_TWO_THREADS = """
import sys, threading
import lanes
barrier = threading.Barrier(2)
def first_use(name):
    barrier.wait()
    if name == "Producer":
        from lanes import Producer as client
    else:
        client = lanes.Consumer
    assert client.__name__ == name
threads = [threading.Thread(target=first_use, args=(name,)) for name in ("Producer", "Consumer")]
for thread in threads:
    thread.start()
for thread in threads:
    thread.join(30)
print("hung" if any(thread.is_alive() for thread in threads) else "ok", flush=True)
"""


def test_a_producer_and_a_consumer_first_used_from_two_threads_at_once_import_cleanly() -> None:
    """Issue #35: ``lanes.client`` imported every client while it initialised, so the first use of
    a Producer in one thread and of a Consumer in another deadlocked on each other's module
    (Python then handed one thread a module not yet initialised). Fresh interpreters, each
    racing the two first uses."""
    for _ in range(5):
        run = subprocess.run(
            [sys.executable, "-c", _TWO_THREADS], check=False, capture_output=True, text=True, timeout=120
        )
        assert (run.stdout.strip(), run.stderr) == ("ok", ""), run.stderr[-2000:]
