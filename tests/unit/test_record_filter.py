"""The search language: conditions, JSON paths, their bounds (lanes.search)."""

from __future__ import annotations

import pytest

from lanes.protocol.records import Record
from lanes.search.json_path import MISSING, JsonPathError, parse_json_path
from lanes.search.record_filter import Check, Condition, Field, FilterError, RecordFilter, parse_condition


def record(key: bytes | None = b"k", value: bytes | None = b"v", headers: tuple = (), timestamp: int = 1_000) -> Record:
    return Record(0, timestamp, key, value, headers)


def keeps(text: str, rec: Record) -> bool:
    return RecordFilter.of([parse_condition(text)]).matches(rec)


@pytest.mark.parametrize(
    ("text", "steps"),
    [
        ("$", ()),
        ("$.a", ("a",)),
        ("$.lines[0].sku", ("lines", 0, "sku")),
        ("$['unit price']", ("unit price",)),
        ('$["a\\"b"]', ('a"b',)),
        ("$.a-b._c", ("a-b", "_c")),
    ],
)
def test_json_paths_parse_to_their_steps(text: str, steps: tuple) -> None:
    assert parse_json_path(text).steps == steps


@pytest.mark.parametrize(
    "text", ["a.b", "$.", "$..a", "$[*]", "$[?(@.a)]", "$['a'", "$[0", "$.a b", "$" + ".a" * 33, "$." + "a" * 300]
)
def test_paths_outside_the_grammar_or_bounds_are_refused(text: str) -> None:
    with pytest.raises(JsonPathError):
        parse_json_path(text)


def test_a_path_finds_one_member_or_nothing() -> None:
    document = {"lines": [{"sku": "x"}], "n": None}
    assert parse_json_path("$.lines[0].sku").find(document) == "x"
    assert parse_json_path("$.n").find(document) is None
    assert parse_json_path("$.lines[1]").find(document) is MISSING
    assert parse_json_path("$.lines.sku").find(document) is MISSING


def test_key_value_and_header_tests() -> None:
    rec = record(b"order-17", b'{"price": 42}', (("trace", b"abc"), ("empty", None)))
    assert keeps("key=order-17", rec)
    assert not keeps("key=order-1", rec)
    assert keeps("key~der-1", rec)
    assert keeps("key", rec)
    assert not keeps("key", record(key=None))
    assert keeps("value~price", rec)
    assert not keeps("value~cost", rec)
    assert keeps("header:trace=abc", rec)
    assert keeps("header:trace~b", rec)
    assert not keeps("header:trace=ab", rec)
    assert keeps("header:empty", rec)
    assert not keeps("header:empty=", rec)
    assert not keeps("header:missing", rec)
    assert keeps("!header:missing", rec)
    assert not keeps("!key", rec)


def test_json_tests_compare_json_values() -> None:
    rec = record(value=b'{"price": 42, "sym": "ABC", "ok": true, "n": null, "lines": [{"q": 1.0}]}')
    assert keeps("$.price=42", rec)
    assert keeps("$.price=42.0", rec)
    assert not keeps("$.price=43", rec)
    assert keeps("$.sym=ABC", rec), "a bare word is taken as a string"
    assert keeps('$.sym="ABC"', rec)
    assert keeps("$.sym~B", rec)
    assert not keeps("$.price~4", rec)
    assert keeps("$.ok=true", rec)
    assert not keeps("$.ok=1", rec), "true is not 1"
    assert keeps("$.n=null", rec)
    assert keeps("$.n", rec)
    assert not keeps("$.m", rec)
    assert keeps("$.lines[0].q=1", rec)
    assert not keeps("$.price=42", record(value=b"not json"))
    assert not keeps("$.price", record(value=None))


def test_deeply_nested_json_is_no_match_not_a_crash() -> None:
    assert not keeps("$.a", record(value=b"[" * 100_000 + b"]" * 100_000))


def test_all_conditions_and_the_time_range_must_hold() -> None:
    both = RecordFilter.of([parse_condition("key=a"), parse_condition("value~b")], from_ms=100, to_ms=200)
    assert both.matches(record(b"a", b"xbx", timestamp=150))
    assert not both.matches(record(b"a", b"xxx", timestamp=150))
    assert not both.matches(record(b"a", b"b", timestamp=200)), "the range ends before to_ms"
    assert not both.matches(record(b"a", b"b", timestamp=99))
    assert both.may_follow(100)
    assert not both.may_follow(99)


def test_needles_come_from_byte_tests_that_must_hold() -> None:
    found = RecordFilter.of([parse_condition(t) for t in ("key=a", "!value~b", "header:h=c", "$.x=1", "key")])
    assert found.needles == (b"a", b"c")


@pytest.mark.parametrize(
    "text",
    ["price>3", "header:=x", "$.a[=1", "$[*]~x", "$.a=" + "x" * 5000, "tokey=1", ""],
)
def test_malformed_conditions_get_a_clear_error(text: str) -> None:
    with pytest.raises(FilterError) as refused:
        parse_condition(text)
    assert str(refused.value)


def test_bounds_on_the_number_of_conditions_and_the_time_range() -> None:
    with pytest.raises(FilterError, match="at most 16"):
        RecordFilter.of([Condition(Field.KEY, Check.EXISTS)] * 17)
    with pytest.raises(FilterError, match="empty"):
        RecordFilter.of([], from_ms=5, to_ms=5)
    with pytest.raises(FilterError, match="operand"):
        RecordFilter.of([Condition(Field.VALUE, Check.CONTAINS, b"x" * 4097)])
    with pytest.raises(FilterError, match="names the header"):
        RecordFilter.of([Condition(Field.HEADER, Check.EXISTS)])


def test_a_condition_describes_itself_in_its_own_words() -> None:
    for text in ("key=a", "!value~b", "header:h=c", "header:h", "$.x=1"):
        assert parse_condition(text).describe() == text
