"""A node refuses metadata of another history: a controller whose committed log does not reach
the last entry the node applied, or holds an entry of another quorum epoch there (a directory
restored from an old copy). What the node applied is kept across its restarts."""

from __future__ import annotations

from pathlib import Path

import pytest

from lanes.runtime.link.controller_link import ControllerLink, MetadataRefusedError
from lanes.runtime.serving.data_directory import DataDirectory
from lanes.v1 import common_pb2, controller_pb2


def link(applied: tuple[int, int]) -> ControllerLink:
    return ControllerLink("127.0.0.1:1", node_id=1, incarnation_id="i", endpoint=common_pb2.Node(), applied=applied)


def first_update(applied_offset_epoch: int) -> controller_pb2.MetadataUpdate:
    return controller_pb2.MetadataUpdate(next_offset=40, applied_offset_epoch=applied_offset_epoch)


def test_the_same_history_is_accepted_and_another_is_refused() -> None:
    node = link((30, 7))
    node._check_lineage(first_update(7))
    with pytest.raises(MetadataRefusedError, match="another history"):
        node._check_lineage(first_update(6))
    with pytest.raises(MetadataRefusedError, match="ends before offset 30"):
        node._check_lineage(first_update(-1))
    link((-1, -1))._check_lineage(first_update(-1))  # a node that never applied anything takes any


def test_what_a_node_applied_outlives_it(tmp_path: Path) -> None:
    directory = DataDirectory(tmp_path)
    assert directory.applied == (-1, -1)
    directory.record_applied(41, 9)
    directory.close()
    assert DataDirectory(tmp_path).applied == (41, 9)
