"""Specification of Kubernetes quantities and resource lists (federation.resources)."""

from __future__ import annotations

import copy
import pickle
from fractions import Fraction

import pytest
from pydantic import BaseModel, ValidationError

from federation import resources
from federation.resources import (
    Quantity,
    QuantityError,
    ResourceList,
    SignedQuantity,
    format_quantity,
    normalise_name,
    parse_quantity,
    to_quota_name,
)

GI = 1024**3


@pytest.mark.parametrize(
    ("text", "milli"),
    [
        pytest.param("100m", 100, id="milli cores"),
        pytest.param("2", 2000, id="whole number"),
        pytest.param("1.5", 1500, id="decimal fraction"),
        pytest.param(".5", 500, id="leading dot"),
        pytest.param("5.", 5000, id="trailing dot"),
        pytest.param("+3", 3000, id="explicit plus sign"),
        pytest.param("-2", -2000, id="negative is parsed, policy decides"),
        pytest.param(" 4 ", 4000, id="surrounding blanks ignored like the API server"),
        pytest.param("0", 0, id="zero"),
        pytest.param("1n", 1, id="nano rounds up to one milli"),
        pytest.param("1000000n", 1, id="a million nano is one milli"),
        pytest.param("1500000u", 1500, id="micro"),
        pytest.param("2k", 2_000_000, id="kilo"),
        pytest.param("3M", 3 * 10**9, id="mega"),
        pytest.param("1G", 10**12, id="giga"),
        pytest.param("1T", 10**15, id="tera"),
        pytest.param("1P", 10**18, id="peta"),
        pytest.param("1E", 10**21, id="exa, not an exponent"),
        pytest.param("1Ki", 1024 * 1000, id="kibi"),
        pytest.param("0.5Ki", 512 * 1000, id="fractional kibi"),
        pytest.param("500Mi", 500 * 1024**2 * 1000, id="mebi"),
        pytest.param("16Gi", 16 * GI * 1000, id="gibi"),
        pytest.param("1.5Gi", 1536 * 1024**2 * 1000, id="fractional gibi"),
        pytest.param("1Ti", 1024**4 * 1000, id="tebi"),
        pytest.param("1Pi", 1024**5 * 1000, id="pebi"),
        pytest.param("1Ei", 1024**6 * 1000, id="exbi"),
        pytest.param("1e3", 1_000_000, id="lower-case exponent"),
        pytest.param("1E3", 1_000_000, id="upper-case exponent"),
        pytest.param("1e+3", 1_000_000, id="exponent with plus"),
        pytest.param("1.5e-3", 2, id="negative exponent rounds up to a milli"),
        pytest.param("25e-1", 2500, id="exponent below one"),
        pytest.param("0.1m", 1, id="sub-milli rounds up"),
        pytest.param("1.0001", 1001, id="sub-milli fraction rounds up"),
        pytest.param("-0.1m", -1, id="negative sub-milli rounds away from zero"),
        pytest.param("1.000", 1000, id="exact fraction does not round"),
        pytest.param(2, 2000, id="YAML integer"),
        pytest.param(1.5, 1500, id="YAML float read by its decimal spelling"),
        pytest.param(0.1, 100, id="YAML float 0.1 is exactly 100m"),
        pytest.param(1e-05, 1, id="YAML tiny float rounds up"),
    ],
)
def test_parse_quantity_is_exact(text: str | int | float, milli: int) -> None:
    assert parse_quantity(text) == milli


@pytest.mark.parametrize(
    ("text", "message"),
    [
        pytest.param(
            "12GB",
            "invalid quantity '12GB': unknown suffix 'GB' (did you mean '12G' or '12Gi'?)",
            id="bytes suffix from other tools",
        ),
        pytest.param(
            "1K",
            "invalid quantity '1K': unknown suffix 'K' (did you mean '1k' or '1Ki'?)",
            id="upper-case kilo",
        ),
        pytest.param(
            "4gi",
            "invalid quantity '4gi': unknown suffix 'gi' (did you mean '4Gi'?)",
            id="lower-case gibi",
        ),
        pytest.param(
            "1MiB",
            "invalid quantity '1MiB': unknown suffix 'MiB' (did you mean '1Mi'?)",
            id="IEC bytes spelling",
        ),
        pytest.param(
            "2 cores",
            "invalid quantity '2 cores': unknown suffix ' cores' (expected n, u, m, k, M, G, T,"
            " P, E, Ki, Mi, Gi, Ti, Pi, Ei, or an exponent like e3)",
            id="words",
        ),
        pytest.param(
            "abc",
            "invalid quantity 'abc': expected a number with an optional suffix,"
            " e.g. 500m, 2, 1.5, 16Gi",
            id="no number at all",
        ),
        pytest.param(
            "Gi",
            "invalid quantity 'Gi': expected a number with an optional suffix,"
            " e.g. 500m, 2, 1.5, 16Gi",
            id="suffix alone",
        ),
        pytest.param(
            "1.2.3",
            "invalid quantity '1.2.3': malformed number (expected digits with at most one '.')",
            id="two decimal points",
        ),
        pytest.param("", "invalid quantity '': empty", id="empty string"),
        pytest.param("   ", "invalid quantity '   ': empty", id="blank string"),
        pytest.param(
            "1e99",
            "invalid quantity '1e99': exponent 99 is out of range (-40..40)",
            id="absurd exponent refused before computing it",
        ),
        pytest.param(
            "9" * 40, "invalid quantity '" + "9" * 40 + "': too large (at most 1e24)", id="huge"
        ),
        pytest.param(
            "1" * 65,
            "invalid quantity '11111111111111111111...': longer than 64 characters",
            id="very long text",
        ),
        pytest.param(
            True, "invalid quantity True: expected a string or a number", id="YAML boolean"
        ),
        pytest.param(None, "invalid quantity None: expected a string or a number", id="null"),
        pytest.param(float("nan"), "invalid quantity nan: not a finite number", id="NaN"),
    ],
)
def test_malformed_quantity_names_the_value(text: object, message: str) -> None:
    with pytest.raises(QuantityError) as caught:
        parse_quantity(text)  # type: ignore[arg-type]
    assert str(caught.value) == message


def test_quantity_error_is_a_value_error() -> None:
    assert issubclass(QuantityError, ValueError)


@pytest.mark.parametrize(
    ("milli", "binary", "text"),
    [
        pytest.param(1500, None, "1500m", id="fraction stays in milli"),
        pytest.param(2000, None, "2", id="whole units drop the suffix"),
        pytest.param(0, None, "0", id="zero"),
        pytest.param(1_500_000, None, "1500", id="mantissa must be whole: 1500 not 1.5k"),
        pytest.param(2_000_000, None, "2k", id="kilo"),
        pytest.param(10**21, None, "1E", id="exa is the largest suffix"),
        pytest.param(10**24, None, "1000E", id="beyond exa grows the number"),
        pytest.param(GI * 1000, None, "1Gi", id="a GiB of bytes reads 1Gi"),
        pytest.param(1536 * 1024**2 * 1000, None, "1536Mi", id="1.5Gi in whole mebibytes"),
        pytest.param(2048 * 1000, None, "2Ki", id="auto prefers the shorter binary"),
        pytest.param(1024 * 1000, False, "1024", id="decimal forced"),
        pytest.param(10**12, True, "1G", id="binary impossible falls back to decimal"),
        pytest.param(512 * 1000, True, "512", id="below 1Ki stays decimal"),
        pytest.param(1500, True, "1500m", id="fractional stays decimal"),
        pytest.param(-2000, None, "-2", id="negative"),
        pytest.param(-GI * 1000, True, "-1Gi", id="negative binary"),
    ],
)
def test_format_quantity_is_canonical(milli: int, binary: bool | None, text: str) -> None:
    assert format_quantity(milli, binary=binary) == text


@pytest.mark.parametrize(
    "text",
    ["100m", "2", "16Gi", "500Mi", "1e3", "2k", "0.5Ki", "1E", "1.5e-3", "7", "123456789m"],
)
def test_formatting_round_trips(text: str) -> None:
    milli = parse_quantity(text)
    assert parse_quantity(format_quantity(milli)) == milli
    assert parse_quantity(format_quantity(milli, binary=True)) == milli


@pytest.mark.parametrize(
    ("name", "plain", "quota"),
    [
        pytest.param("cpu", "cpu", "requests.cpu", id="cpu"),
        pytest.param("requests.cpu", "cpu", "requests.cpu", id="quota spelling of cpu"),
        pytest.param("memory", "memory", "requests.memory", id="memory"),
        pytest.param("nvidia.com/gpu", "nvidia.com/gpu", "requests.nvidia.com/gpu", id="gpu"),
        pytest.param(
            "requests.nvidia.com/gpu",
            "nvidia.com/gpu",
            "requests.nvidia.com/gpu",
            id="quota spelling of gpu",
        ),
        pytest.param(
            "huawei.com/Ascend910",
            "huawei.com/Ascend910",
            "requests.huawei.com/Ascend910",
            id="ascend npu",
        ),
        pytest.param("limits.cpu", "limits.cpu", "limits.cpu", id="limits stay distinct"),
        pytest.param("pods", "pods", "pods", id="object count"),
        pytest.param("count/jobs.batch", "count/jobs.batch", "count/jobs.batch", id="count"),
        pytest.param("hugepages-2Mi", "hugepages-2Mi", "requests.hugepages-2Mi", id="huge pages"),
        pytest.param(
            "requests.storage",
            "requests.storage",
            "requests.storage",
            id="PVC storage: a quota's only name for it (no ResourceQuota takes `storage`)",
        ),
        pytest.param("storage", "requests.storage", "requests.storage", id="storage"),
        pytest.param(
            "example.kubernetes.io/thing",
            "example.kubernetes.io/thing",
            "example.kubernetes.io/thing",
            id="native kubernetes.io names are not extended",
        ),
    ],
)
def test_resource_name_spellings(name: str, plain: str, quota: str) -> None:
    assert normalise_name(name) == plain
    assert to_quota_name(name) == quota
    assert ResourceList.normalise_name(name) == plain
    assert ResourceList.to_quota_name(name) == quota


@pytest.mark.parametrize(
    ("name", "message"),
    [
        pytest.param("", "invalid resource name '': empty", id="empty"),
        pytest.param(
            "nvidia gpu",
            "invalid resource name 'nvidia gpu': use letters, digits, '-', '_', '.' and '/',"
            " e.g. cpu, memory, nvidia.com/gpu",
            id="blank inside",
        ),
    ],
)
def test_bad_resource_names(name: str, message: str) -> None:
    with pytest.raises(QuantityError) as caught:
        normalise_name(name)
    assert str(caught.value) == message


def rl(**amounts: str | int) -> ResourceList:
    """ResourceList from wire quantities; `__` in keyword names stands for `/`."""
    return ResourceList.from_wire({k.replace("__", "/"): v for k, v in amounts.items()})


class TestResourceList:
    def test_from_wire_normalises_and_formats(self) -> None:
        parsed = ResourceList.from_wire(
            {"requests.cpu": "1500m", "memory": "16Gi", "requests.nvidia.com/gpu": 8}
        )
        assert dict(parsed) == {"cpu": 1500, "memory": 16 * GI * 1000, "nvidia.com/gpu": 8000}
        assert parsed.to_wire() == {"cpu": "1500m", "memory": "16Gi", "nvidia.com/gpu": "8"}
        assert parsed.to_quota() == {
            "requests.cpu": "1500m",
            "requests.memory": "16Gi",
            "requests.nvidia.com/gpu": "8",
        }
        assert str(parsed) == "cpu=1500m, memory=16Gi, nvidia.com/gpu=8"

    def test_memory_prints_binary_and_cpu_decimal(self) -> None:
        assert rl(cpu=2048, memory="2Gi").to_wire() == {"cpu": "2048", "memory": "2Gi"}

    def test_same_resource_twice_is_refused(self) -> None:
        with pytest.raises(QuantityError) as caught:
            ResourceList.from_wire({"cpu": "1", "requests.cpu": "2"})
        assert str(caught.value) == "resource 'cpu' is given twice (as 'requests.cpu' too)"

    def test_malformed_value_names_resource_and_value(self) -> None:
        with pytest.raises(QuantityError, match=r"^memory: invalid quantity '12GB'"):
            ResourceList.from_wire({"memory": "12GB"})

    def test_negative_refused_unless_allowed(self) -> None:
        with pytest.raises(QuantityError) as caught:
            ResourceList.from_wire({"cpu": "-1"})
        assert str(caught.value) == "cpu: invalid quantity '-1': must not be negative"
        assert dict(ResourceList.from_wire({"cpu": "-1"}, allow_negative=True)) == {"cpu": -1000}

    def test_amounts_must_be_milli_integers(self) -> None:
        with pytest.raises(QuantityError, match=r"use ResourceList\.from_wire"):
            ResourceList({"cpu": "2"})  # type: ignore[arg-type]

    def test_arithmetic(self) -> None:
        a = rl(cpu="1500m", memory="1Gi")
        b = rl(cpu=2, nvidia__gpu=1)
        assert a + b == rl(cpu="3500m", memory="1Gi", nvidia__gpu=1)
        assert a - b == ResourceList({"cpu": -500, "memory": GI * 1000, "nvidia/gpu": -1000})
        assert (a - b).nonnegative() == ResourceList(
            {"cpu": 0, "memory": GI * 1000, "nvidia/gpu": 0}
        )
        assert a.max_with(b) == rl(cpu=2, memory="1Gi", nvidia__gpu=1)
        assert a.scaled(3) == rl(cpu="4500m", memory="3Gi")
        assert a.only(["requests.cpu"]) == rl(cpu="1500m")
        assert a.amount("requests.memory") == GI * 1000
        assert a.amount("nvidia.com/gpu") == 0

    def test_is_immutable_and_hashable(self) -> None:
        a = rl(cpu=1)
        with pytest.raises(AttributeError):
            a.x = 1
        assert hash(a) == hash(rl(cpu="1000m"))
        assert {a: "ok"}[rl(cpu="1")] == "ok"

    @pytest.mark.parametrize(
        ("wanted", "limit", "unlimited", "fits", "over"),
        [
            pytest.param({"cpu": 2}, {"cpu": 2}, False, True, {}, id="exactly full fits"),
            pytest.param({"cpu": 3}, {"cpu": 2}, False, False, {"cpu": 1}, id="too much cpu"),
            pytest.param(
                {"nvidia.com/gpu": 1},
                {"cpu": 8},
                False,
                False,
                {"nvidia.com/gpu": 1},
                id="missing resource counts as zero capacity",
            ),
            pytest.param(
                {"nvidia.com/gpu": 1},
                {"cpu": 8},
                True,
                True,
                {},
                id="missing resource is unlimited in a quota",
            ),
            pytest.param(
                {"nvidia.com/gpu": 1},
                {"nvidia.com/gpu": 0},
                True,
                False,
                {"nvidia.com/gpu": 1},
                id="explicit zero forbids even in a quota",
            ),
            pytest.param({"cpu": 0}, {}, False, True, {}, id="zero request always fits"),
            pytest.param({}, {}, False, True, {}, id="nothing fits in nothing"),
        ],
    )
    def test_fits_within(
        self,
        wanted: dict[str, int],
        limit: dict[str, int],
        unlimited: bool,
        fits: bool,
        over: dict[str, int],
    ) -> None:
        request, capacity = ResourceList.from_wire(wanted), ResourceList.from_wire(limit)
        assert request.fits_within(capacity, unlisted_unlimited=unlimited) is fits
        assert request.exceeding(capacity, unlisted_unlimited=unlimited) == (
            ResourceList.from_wire(over)
        )

    @pytest.mark.parametrize(
        ("used", "capacity", "share"),
        [
            pytest.param(
                {"cpu": 4, "memory": "8Gi"},
                {"cpu": 16, "memory": "16Gi"},
                Fraction(1, 2),
                id="memory dominates",
            ),
            pytest.param(
                {"cpu": 12, "nvidia.com/gpu": 1},
                {"cpu": 16, "nvidia.com/gpu": 8},
                Fraction(3, 4),
                id="cpu dominates",
            ),
            pytest.param(
                {"cpu": "1", "nvidia.com/gpu": 1},
                {"cpu": 3},
                Fraction(1, 3),
                id="resource without capacity is left out",
            ),
            pytest.param({}, {"cpu": 3}, Fraction(0), id="nothing used"),
            pytest.param({"cpu": 6}, {"cpu": 3}, Fraction(2), id="over capacity exceeds one"),
        ],
    )
    def test_dominant_share_is_exact(
        self, used: dict[str, str | int], capacity: dict[str, str | int], share: Fraction
    ) -> None:
        got = ResourceList.from_wire(used).dominant_share(ResourceList.from_wire(capacity))
        assert isinstance(got, Fraction)
        assert got == share

    def test_copies_and_pickles(self) -> None:
        a = rl(cpu="1500m", memory="1Gi")
        assert copy.copy(a) is a
        assert copy.deepcopy(a) is a, "immutable: a copy is the same value"
        assert pickle.loads(pickle.dumps(a)) == a

    def test_is_zero(self) -> None:
        assert ResourceList().is_zero()
        assert rl(cpu=0, memory=0).is_zero()
        assert not rl(cpu="1m").is_zero()

    def test_explicit_zero_is_kept(self) -> None:
        assert rl(nvidia__gpu=0).to_wire() == {"nvidia/gpu": "0"}
        assert rl(nvidia__gpu=0) != ResourceList()


class Holder(BaseModel):
    size: Quantity
    delta: SignedQuantity = 0
    limits: ResourceList = ResourceList()


class TestPydanticTypes:
    def test_quantity_field_accepts_strings_and_numbers(self) -> None:
        held = Holder.model_validate({"size": "1.5", "delta": "-2", "limits": {"cpu": 2}})
        assert held.size == 1500
        assert held.delta == -2000
        assert held.limits == rl(cpu=2)

    def test_serialises_back_to_canonical_strings(self) -> None:
        held = Holder.model_validate({"size": "1024Mi", "limits": {"requests.memory": "2048Mi"}})
        assert held.model_dump() == {"size": "1Gi", "delta": "0", "limits": {"memory": "2Gi"}}
        assert Holder.model_validate_json(held.model_dump_json()) == held

    def test_existing_resource_list_passes_through(self) -> None:
        limits = rl(cpu=3, memory="1Gi")
        assert Holder(size=1, limits=limits).limits == limits

    def test_errors_point_at_the_offending_entry(self) -> None:
        with pytest.raises(ValidationError) as caught:
            Holder.model_validate({"size": "-1", "limits": {"cpu": "x", "memory": -1}})
        found = {tuple(e["loc"]): e["msg"] for e in caught.value.errors()}
        assert found == {
            ("size",): "invalid quantity '-1': must not be negative",
            ("limits", "cpu"): "invalid quantity 'x': expected a number with an optional"
            " suffix, e.g. 500m, 2, 1.5, 16Gi",
            ("limits", "memory"): "invalid quantity -1: must not be negative",
        }

    def test_duplicate_spelling_is_a_field_error(self) -> None:
        with pytest.raises(ValidationError) as caught:
            Holder.model_validate({"size": 1, "limits": {"cpu": 1, "requests.cpu": 1}})
        (error,) = caught.value.errors()
        assert error["loc"] == ("limits",)
        assert error["msg"] == "resource 'cpu' is given twice (as 'requests.cpu' too)"

    def test_json_schema_describes_quantities(self) -> None:
        schema = Holder.model_json_schema()
        size = schema["properties"]["size"]
        assert size["anyOf"][0]["type"] == "string"
        assert "16Gi" in size["description"]
        limits = schema["properties"]["limits"]
        assert limits["type"] == "object"
        assert limits["additionalProperties"]["anyOf"][1] == {"type": "number", "minimum": 0}


@pytest.mark.parametrize(
    ("free", "total", "binary", "shown"),
    [
        ("38500m", "40", False, "38.5/40"),
        ("162304Mi", "160Gi", True, "158.5Gi/160Gi"),
        ("40", "40", False, "40/40"),
        ("0", "16", False, "0/16"),
        ("500m", "1500m", False, "500m/1500m"),
        ("159999Mi", "160Gi", True, "156.2Gi/160Gi"),  # 156.249: down, never more than free
    ],
)
def test_a_free_amount_reads_in_its_total_s_unit(
    free: str, total: str, binary: bool, shown: str
) -> None:
    milli = [resources.parse_quantity(q) for q in (free, total)]
    text = resources.format_like(milli[0], milli[1], binary=binary)
    assert f"{text}/{resources.format_quantity(milli[1], binary=binary)}" == shown


def test_module_surface_is_small() -> None:
    assert sorted(resources.__all__) == [
        "Quantity",
        "QuantityError",
        "ResourceList",
        "SignedQuantity",
        "device_names",
        "format_like",
        "format_quantity",
        "normalise_name",
        "parse_quantity",
        "to_quota_name",
    ]


def test_device_names_are_fleet_devices_and_other_extended_names_but_hugepages() -> None:
    pod = ["cpu", "memory", "nvidia.com/gpu", "hugepages-2Mi", "example.com/fpga", "npu"]
    assert resources.device_names(pod, {"npu"}) == {"nvidia.com/gpu", "example.com/fpga", "npu"}
    assert resources.device_names(["cpu", "memory"], {"nvidia.com/gpu"}) == frozenset()
