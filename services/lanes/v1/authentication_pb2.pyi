from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from typing import ClassVar as _ClassVar, Optional as _Optional

DESCRIPTOR: _descriptor.FileDescriptor

class AuthenticateRequest(_message.Message):
    __slots__ = ("mechanism", "exchange_id", "message")
    MECHANISM_FIELD_NUMBER: _ClassVar[int]
    EXCHANGE_ID_FIELD_NUMBER: _ClassVar[int]
    MESSAGE_FIELD_NUMBER: _ClassVar[int]
    mechanism: str
    exchange_id: str
    message: str
    def __init__(self, mechanism: _Optional[str] = ..., exchange_id: _Optional[str] = ..., message: _Optional[str] = ...) -> None: ...

class AuthenticateResponse(_message.Message):
    __slots__ = ("exchange_id", "message", "session", "session_lifetime_ms")
    EXCHANGE_ID_FIELD_NUMBER: _ClassVar[int]
    MESSAGE_FIELD_NUMBER: _ClassVar[int]
    SESSION_FIELD_NUMBER: _ClassVar[int]
    SESSION_LIFETIME_MS_FIELD_NUMBER: _ClassVar[int]
    exchange_id: str
    message: str
    session: str
    session_lifetime_ms: int
    def __init__(self, exchange_id: _Optional[str] = ..., message: _Optional[str] = ..., session: _Optional[str] = ..., session_lifetime_ms: _Optional[int] = ...) -> None: ...
