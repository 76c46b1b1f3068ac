"""Bad input from Python: ScenarioError (a ValueError) with the key's path, the
position and what would be valid, as the CLI says it."""

from __future__ import annotations

import pickle

import pytest

import darkbuf
from conftest import cli

SCENARIO = "scenarios/veth-bql.toml"


def test_unknown_key_in_set_names_the_key_and_suggests():
    with pytest.raises(darkbuf.ScenarioError) as e:
        darkbuf.run(SCENARIO, {"device.bql.limit_mn": 8})
    err = e.value
    assert isinstance(err, ValueError)
    assert err.kind == "unknown_key"
    assert err.key == "device.bql.limit_mn"
    assert err.file == "--set device.bql.limit_mn=8"
    assert "limit_min" in err.help
    # The CLI prints the same diagnostic.
    r = cli("run", SCENARIO, "--set", "device.bql.limit_mn=8", check=False)
    assert r.returncode == 2 and r.stderr.strip() == f"darkbuf: {err}"


def test_unknown_key_in_a_dict_has_its_path_and_position():
    scenario = {"duration": "1s", "device": {"bql": {"enabled": True, "limit_mn": 8}}, "traffic": [{"kind": "udp"}]}
    with pytest.raises(darkbuf.ScenarioError) as e:
        darkbuf.run(scenario)
    err = e.value
    assert err.kind == "unknown_key"
    assert err.key == "device.bql.limit_mn"
    assert err.file == "<dict>" and err.line is not None and err.column is not None
    assert "limit_min" in err.help
    assert str(err).startswith(f"<dict>:{err.line}:{err.column}: ")


def test_wrong_type_in_a_dict_has_its_path_and_the_valid_type():
    scenario = {"duration": "1s", "device": {"bql": {"limit_min": "eight"}}, "traffic": [{"kind": "udp"}]}
    with pytest.raises(darkbuf.ScenarioError) as e:
        darkbuf.run(scenario)
    err = e.value
    assert isinstance(err, ValueError)
    assert err.kind == "type"
    assert err.key == "device.bql.limit_min"
    assert "integer" in str(err)


def test_wrong_type_in_the_traffic_list_has_the_index_in_its_path():
    scenario = {"duration": "1s", "traffic": [{"kind": "udp", "size": [1400]}]}
    with pytest.raises(darkbuf.ScenarioError) as e:
        darkbuf.run(scenario)
    assert e.value.key == "traffic.0.size"


@pytest.mark.parametrize("value, what", [(None, "None"), (object(), "an object"), ({1, 2}, "a set")])
def test_a_python_value_that_is_no_scenario_value(value, what):
    with pytest.raises(darkbuf.ScenarioError) as e:
        darkbuf.run({"consumer": {"nrules": value}, "traffic": [{"kind": "udp"}]})
    err = e.value
    assert err.key == "consumer.nrules"
    assert f"{what} cannot be a scenario value" in str(err)
    assert "int" in err.help and "str" in err.help
    with pytest.raises(darkbuf.ScenarioError) as e2:
        darkbuf.run(SCENARIO, consumer__nrules=value)
    assert e2.value.key == "consumer.nrules"


def test_a_value_out_of_range_in_a_keyword():
    with pytest.raises(darkbuf.ScenarioError) as e:
        darkbuf.run(SCENARIO, device__bql__limit_min=-1)
    assert e.value.key == "device.bql.limit_min" and e.value.kind == "value"


def test_a_file_error_has_the_cli_position(tmp_path):
    p = tmp_path / "typo.toml"
    p.write_text('duration = "1s"\n[device.bql]\nenabled = true\nlimit_mn = 8\n[[traffic]]\nkind = "udp"\n')
    with pytest.raises(darkbuf.ScenarioError) as e:
        darkbuf.run(str(p))
    assert (e.value.file, e.value.line, e.value.column) == (str(p), 4, 1)
    r = cli("run", str(p), check=False)
    assert r.stderr.strip() == f"darkbuf: {e.value}"


def test_a_missing_file_is_an_io_error():
    with pytest.raises(darkbuf.ScenarioError) as e:
        darkbuf.run("scenarios/no-such-file.toml")
    assert e.value.kind == "io" and "cannot read" in str(e.value)


def test_a_bad_profile_is_a_scenario_error_naming_the_key():
    with pytest.raises(darkbuf.ScenarioError) as e:
        darkbuf.run(SCENARIO, machine__profile="laptop")
    assert e.value.key == "machine.profile" and "seed-vm" in str(e.value)


def test_sweep_values_must_be_a_non_empty_list():
    with pytest.raises(darkbuf.ScenarioError) as e:
        darkbuf.sweep(SCENARIO, {"consumer.nrules": 3500})
    assert e.value.key == "consumer.nrules" and "list" in str(e.value)
    with pytest.raises(darkbuf.ScenarioError):
        darkbuf.sweep(SCENARIO, {"consumer.nrules": []})


def test_bad_api_arguments():
    with pytest.raises(ValueError, match="engine"):
        darkbuf.run(SCENARIO, engine="spark")
    with pytest.raises(TypeError, match="scenario"):
        darkbuf.run(42)


def test_scenario_errors_pickle_with_their_attributes():
    with pytest.raises(darkbuf.ScenarioError) as e:
        darkbuf.run(SCENARIO, {"device.bql.limit_mn": 8})
    back = pickle.loads(pickle.dumps(e.value))
    assert type(back) is darkbuf.ScenarioError
    assert (back.file, back.line, back.column, back.key, back.help, back.kind, str(back)) == (
        e.value.file, e.value.line, e.value.column, e.value.key, e.value.help, e.value.kind, str(e.value))


def test_run_checks_the_variants_it_leaves_out(tmp_path):
    # As the CLI's `darkbuf run`: a typo in a [[variant]] that run does not run is an
    # error at its line and column, not ignored.
    f = tmp_path / "bad-variant.toml"
    f.write_text('duration = "100ms"\n[[traffic]]\nkind = "udp"\n[[variant]]\nlabel = "x"\n"consumer.nrulez" = 1\n')
    with pytest.raises(darkbuf.ScenarioError, match="unknown key `nrulez` in \\[consumer\\]") as e:
        darkbuf.run(str(f))
    assert (e.value.line, e.value.key) == (6, "consumer.nrulez")
