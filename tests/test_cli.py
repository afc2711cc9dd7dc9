"""`gpucachex simulate` from the command line: --set values as the configuration takes them, and --json
output that strict JSON parsers read."""
import json

from gpucachex import cli, presets


def test_set_refuses_a_key_given_twice_under_any_name(capsys):
    # The last value would silently win, as Config refuses a key given twice.
    for first in ("l2.loscache.prediction_period=50", "loscache.prediction_period=50"):
        assert cli.main(["simulate", "bfs:tiny", "--set", "l2.power=loscache", "--set", first,
                         "--set", "l2.loscache.prediction_period=400", "--json"]) == 2
        captured = capsys.readouterr()
        assert captured.out == ""
        assert (f"gpucachex simulate: error: --set: configuration key l2.loscache.prediction_period is given "
                f"twice ('{first}' and 'l2.loscache.prediction_period=400')") in captured.err
