"""Where requests go: base URLs (http and https, ports, prefixes), extra headers (secrets:
never repeated in an error or a repr), the one TLS context, and the config's checks."""

from __future__ import annotations

import ssl
from pathlib import Path

import pytest
from pydantic import ValidationError

from benchlib._exceptions import UsageError
from benchlib.measure import MeasureConfig
from benchlib.measure.load._loadgen import LoadPlan, _headers
from benchlib.measure.wire._endpoint import Endpoint, parse_header
from tests._tls_files import TlsFiles


@pytest.mark.parametrize(("url", "scheme", "host", "port", "prefix", "host_header"), [
    ("http://127.0.0.1:8000", "http", "127.0.0.1", 8000, "", "127.0.0.1:8000"),
    ("http://h", "http", "h", 80, "", "h:80"),
    ("https://api.example.com", "https", "api.example.com", 443, "", "api.example.com"),
    ("https://api.example.com/v1/", "https", "api.example.com", 443, "/v1", "api.example.com"),
    ("HTTPS://Proxy:8443/team/a/v1", "https", "proxy", 8443, "/team/a/v1", "proxy:8443"),
    ("https://[::1]/v1", "https", "::1", 443, "/v1", "[::1]"),
    ("https://[::1]:9443", "https", "::1", 9443, "", "[::1]:9443"),
])
def test_base_urls(url: str, scheme: str, host: str, port: int, prefix: str,
                   host_header: str) -> None:
    ep = Endpoint.parse(url)
    assert (ep.scheme, ep.host, ep.port, ep.prefix) == (scheme, host, port, prefix)
    assert ep.tls == (scheme == "https")
    assert ep.host_header == host_header
    assert ep.path("/v1/chat/completions") == prefix.removesuffix("/v1") + "/v1/chat/completions"


@pytest.mark.parametrize("url", ["ftp://h", "localhost:8000", "https://", "https://h:x"])
def test_bad_base_urls(url: str) -> None:
    with pytest.raises(ValueError):
        Endpoint.parse(url)


def test_header_values_are_never_in_the_repr() -> None:
    ep = Endpoint.parse("https://h", headers=(("Authorization", "Bearer sk-planted-77"),))
    plan = LoadPlan(base_url="https://h", kind="chat", api_key="sk-key-planted-88",
                    headers=ep.headers)
    assert "planted" not in repr(ep) + repr(plan)


@pytest.mark.parametrize(("text", "parsed"), [
    ("Authorization: Bearer sk-1", ("Authorization", "Bearer sk-1")),
    ("X-Api-Key:abc:def", ("X-Api-Key", "abc:def")),
    ("  X-Empty:  ", ("X-Empty", "")),
])
def test_headers_parse(text: str, parsed: tuple[str, str]) -> None:
    assert parse_header(text) == parsed


@pytest.mark.parametrize("text", ["no-colon-sk-planted", "bad name: sk-planted",
                                  ": sk-planted", "Content-Length: 5",
                                  "transfer-encoding: chunked"])
def test_bad_headers_name_the_flag_never_the_value(text: str) -> None:
    with pytest.raises(UsageError) as info:
        parse_header(text)
    assert info.value.field == "--header"
    assert "sk-planted" not in str(info.value).replace("'no-colon-sk-planted'", "")


def test_extra_headers_replace_benchlibs_own() -> None:
    ep = Endpoint.parse("https://h", headers=(("Authorization", "Bearer mine"),
                                              ("User-Agent", "me"), ("X-Team", "a")))
    headers = _headers(ep, b"{}", "sk-from-api-key")
    names = [n.lower() for n, _ in headers]
    assert names.count("authorization") == 1 and names.count("user-agent") == 1
    assert ("Authorization", "Bearer mine") in headers and ("X-Team", "a") in headers
    assert ("host", "h") in headers and ("content-length", "2") in headers


def test_one_tls_context_per_setting(tls_files: TlsFiles, tmp_path: Path) -> None:
    system = Endpoint.parse("https://h").tls_context()
    assert system.verify_mode == ssl.CERT_REQUIRED and system.check_hostname
    bundle = Endpoint.parse("https://h", ca_bundle=tls_files.cert).tls_context()
    assert bundle.verify_mode == ssl.CERT_REQUIRED
    assert len(bundle.get_ca_certs()) == 1  # that bundle, not the system's
    insecure = Endpoint.parse("https://h", insecure=True).tls_context()
    assert insecure.verify_mode == ssl.CERT_NONE and not insecure.check_hostname
    empty = tmp_path / "empty.pem"
    empty.write_text("not a certificate\n")
    with pytest.raises(UsageError) as info:
        Endpoint.parse("https://h", ca_bundle=empty).tls_context()
    assert info.value.field == "--ca-bundle"


def _config(**kw: object) -> MeasureConfig:
    return MeasureConfig.model_validate({"model": "m", "tokenizer": "/t", **kw})


def test_config_takes_https_and_its_tls_settings(tls_files: TlsFiles) -> None:
    cfg = _config(base_url="https://api.example.com/v1/", ca_bundle=tls_files.cert)
    assert cfg.base_url == "https://api.example.com/v1" and cfg.ca_bundle == tls_files.cert
    assert _config(base_url="https://h", insecure=True).insecure


@pytest.mark.parametrize(("kw", "field", "words"), [
    ({"base_url": "http://h:1", "insecure": True}, "insecure", "https://"),
    ({"base_url": "http://h:1", "ca_bundle": "CERT"}, "ca_bundle", "https://"),
    ({"base_url": "https://h", "ca_bundle": "/nonexistent.pem"}, "ca_bundle", "no such file"),
    ({"base_url": "https://h", "ca_bundle": "CERT", "insecure": True}, "insecure", "not both"),
    ({"base_url": "ftp://h"}, "base_url", "https://"),
])
def test_config_refuses_tls_settings_that_cannot_apply(
        tls_files: TlsFiles, kw: dict[str, object], field: str, words: str) -> None:
    kw = {k: (tls_files.cert if v == "CERT" else v) for k, v in kw.items()}
    with pytest.raises(ValidationError) as info:
        _config(**kw)
    errors = info.value.errors()
    assert [e["loc"][0] for e in errors] == [field]
    assert words in errors[0]["msg"]
