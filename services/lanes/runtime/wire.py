"""Small conversions between the wire's error messages and ``ErrorCode``, shared by services."""

from __future__ import annotations

from typing import Any

import grpc

from lanes.protocol.errors import ErrorCode, error_code
from lanes.v1 import common_pb2

#: The servicer context of every Lanes RPC handler.
Context = grpc.aio.ServicerContext[Any, Any]


def wire_error(code: ErrorCode, message: str = "") -> common_pb2.Error:
    """An Error message (NONE carries no message)."""
    return common_pb2.Error(code=int(code), message=message)  # type: ignore[arg-type]


def code_of(error: common_pb2.Error) -> ErrorCode:
    """The ErrorCode of a received Error; numbers this version lacks count as UNKNOWN_SERVER_ERROR."""
    known = error_code(error.code)
    return ErrorCode.UNKNOWN_SERVER_ERROR if known is None else known  # NONE is falsy: no `or`
