"""The blob interface of streamnb.stores, the same on every backend: a directory, S3 (a moto
server on 127.0.0.1) and a compacted topic on the test broker (blobs as one record or chunked)."""

from __future__ import annotations

import uuid

import pytest

from streamnb.exceptions import StateError, StreamnbError
from streamnb.stores import StoreUrl, StoreUrlError, open_blobs, parse_url
from streamnb.stores.kafka import SMALL, KafkaBlobs


@pytest.fixture(params=["dir", "s3", "kafka", "kafka-chunked"])
def opener(request, tmp_path, bootstrap):
    """Opens the blobs of one place, as often as asked (each a separate object, as two processes)."""
    kind = request.param
    if kind == "dir":
        url, options = f"dir:{tmp_path / 'blobs'}", {}
    elif kind == "s3":
        url, options = request.getfixturevalue("s3_url"), {}
    else:
        url = f"kafka://{bootstrap}/blobs-{uuid.uuid4().hex[:10]}/pre"
        options = {"chunk_bytes": 7} if kind == "kafka-chunked" else {}
    opened = []

    def open_():
        blobs = open_blobs(url, **options)
        opened.append(blobs)
        return blobs

    yield open_
    for blobs in opened:
        blobs.close()


def test_get_put_delete_list(opener):
    blobs, other = opener(), opener()
    assert blobs.get("a/b") is None and blobs.list() == []
    blobs.put("a/b", b"first blob")
    blobs.put("a/c/d", b"")
    blobs.put("top", bytes(range(256)) * 3)
    assert other.get("a/b") == b"first blob"  # another opener of the place sees it
    assert other.get("a/c/d") == b"" and other.get("top") == bytes(range(256)) * 3
    blobs.put("a/b", b"second")
    assert other.get("a/b") == b"second"
    assert other.list() == ["a/b", "a/c/d", "top"]
    assert other.list("a/") == ["a/b", "a/c/d"]
    assert other.list("a/", recursive=False) == ["a/b"]
    assert other.list("", recursive=False) == ["top"]
    assert other.list("t") == ["top"] and other.list("x") == []
    blobs.delete("a/b")
    blobs.delete("never/written")  # nothing to do
    assert other.get("a/b") is None and other.list() == ["a/c/d", "top"]


def test_swap_is_a_compare_and_set(opener):
    one, two = opener(), opener()
    assert one.swap("lease/m", b"v1", None)  # absent: taken
    assert not two.swap("lease/m", b"x", None)  # present: refused
    assert two.get("lease/m") == b"v1"
    assert one.get("lease/m") == b"v1"
    assert two.swap("lease/m", b"v2", b"v1")  # two read v1 and swaps it ...
    assert not one.swap("lease/m", b"v3", b"v1")  # ... so one's v1 is stale
    assert one.get("lease/m") == two.get("lease/m") == opener().get("lease/m") == b"v2"
    assert one.swap("lease/m", b"v3", b"v2")
    assert opener().get("lease/m") == b"v3"


def test_only_new_refuses_an_existing_blob(opener):
    blobs = opener()
    blobs.put("m/1", b"one", only_new=True)
    if blobs.kind == "kafka":  # a topic cannot check (its writers are fenced by leases instead)
        blobs.put("m/1", b"two", only_new=True)
        assert opener().get("m/1") == b"two"
        return
    with pytest.raises(StateError, match="write failed"):
        blobs.put("m/1", b"two", only_new=True)
    assert opener().get("m/1") == b"one"


@pytest.mark.parametrize("name", ["", "/a", "a/", "a//b", "../a", "a/../b", "a/./b", "a b", "é"])
def test_bad_names_are_refused(opener, name):
    blobs = opener()
    with pytest.raises(StateError, match="not a blob name"):
        blobs.put(name, b"x")
    with pytest.raises(StateError, match="not a blob name"):
        blobs.get(name)


def test_kafka_reads_both_forms_and_keeps_prefixes_apart(bootstrap):
    topic = f"blobs-{uuid.uuid4().hex[:10]}"
    chunked = KafkaBlobs(bootstrap, topic, "p", chunk_bytes=5)
    single = KafkaBlobs(bootstrap, topic, "p")
    elsewhere = KafkaBlobs(bootstrap, topic, "q")
    try:
        chunked.put("x", b"0123456789abc")  # three chunks and a manifest
        single.put("y", b"one record")
        elsewhere.put("x", b"another prefix")
        reader = KafkaBlobs(bootstrap, topic, "p")
        try:
            assert reader.get("x") == b"0123456789abc" and reader.get("y") == b"one record"
            assert reader.list() == ["x", "y"]
            chunked.delete("x")  # tombstones: the manifest, then the chunks
            assert reader.get("x") is None and reader.list() == ["y"]
            assert KafkaBlobs(bootstrap, topic, "q").get("x") == b"another prefix"
        finally:
            reader.close()
        with pytest.raises(StateError, match="more than one record holds"):
            KafkaBlobs(bootstrap, topic, "p", max_record_bytes=10).put("big", b"x" * 11)
        with pytest.raises(StateError, match=f"at most {SMALL} bytes"):
            single.swap("lease", b"x" * (SMALL + 1), None)
    finally:
        for blobs in (chunked, single, elsewhere):
            blobs.close()


# -- one URL grammar ------------------------------------------------------------------------------
def test_urls_and_their_aliases():
    assert parse_url("dir:/var/x") == StoreUrl("dir", "/var/x", "", None)
    assert parse_url("s3://bucket-1") == StoreUrl("s3", "bucket-1", "", None)
    assert parse_url("s3://bucket-1/a/b/") == StoreUrl("s3", "bucket-1", "a/b", None)
    full = parse_url("kafka://h:1,h:2/state")
    assert full == StoreUrl("kafka", "state", "", "h:1,h:2") == parse_url("kafka:state", bootstrap="h:1,h:2")
    assert parse_url("kafka://h:1/state-keys/main") == StoreUrl("kafka", "state-keys", "main", "h:1")
    assert parse_url("kafka:state") == StoreUrl("kafka", "state", "", None)
    for url in ("dir:/var/x", "s3://bucket-1/a/b", "kafka://h:1/state-keys/main"):
        assert str(parse_url(url)) == url


@pytest.mark.parametrize("url", ["", "dir:", "kafka:", "kafka:a b", "kafka://", "kafka:///t", "kafka://h:1/",
                                 "kafka://h:1/t/../x", "s3://", "s3://A_B/x", "s3://b-1/a//b", "file:/tmp/x",
                                 "/tmp/x", "kafka:" + "t" * 250])
def test_bad_urls_are_refused(url):
    with pytest.raises(StoreUrlError, match="store URL") as err:
        open_blobs(url)
    assert isinstance(err.value, StreamnbError) and isinstance(err.value, ValueError)


def test_kafka_needs_its_bootstrap_servers():
    with pytest.raises(StoreUrlError, match="bootstrap"):
        open_blobs("kafka:state")
