#!/usr/bin/python3
"""Cross-checks tidegate's Holt-Winters fit against statsmodels.

For each series and setting, fits additive Holt-Winters with a 24-hour season
both with `tidegate forecast --model holt_winters_24[_damped|_notrend]` (whose
JSON reports the one-step SSE of its fit on the whole series) and with
statsmodels' ExponentialSmoothing (default: estimated initial states), and
requires tidegate's SSE to be within 1% of statsmodels' or lower.

Run with Debian's /usr/bin/python3 (python3-statsmodels). Exits 77 (CTest's
SKIP_RETURN_CODE) with a message when statsmodels cannot be imported.

  /usr/bin/python3 tests/forecast/statsmodels_crosscheck.py \
      --tidegate build/bin/tidegate --data tests/data
"""
import argparse
import csv
import json
import subprocess
import sys
import warnings

SKIP = 77
TOLERANCE = 1.01

# (file, column, team or None, trend, damped)
CASES = [
    ("philly-pollux.hourly.csv", "demand_gpus", None, "add", False),
    ("philly-pollux.hourly.csv", "demand_gpus", None, "add", True),
    ("philly-pollux.hourly.csv", "submitted_gpus", None, "add", False),
    ("philly-pollux.hourly.csv", "submitted_gpus", None, "add", True),
    ("philly-pollux.hourly.csv", "submitted_gpus", None, None, False),
    ("helios-earth-vc-seq.timeseries.csv", "demand_gpus", "vc3sl", "add", True),
    ("helios-earth-vc-seq.timeseries.csv", "demand_gpus", "vc6YE", "add", True),
    ("helios-earth-vc-seq.timeseries.csv", "demand_gpus", "vcJLV", None, False),
]


def model_name(trend, damped):
    if trend is None:
        return "holt_winters_24_notrend"
    return "holt_winters_24_damped" if damped else "holt_winters_24"


def load(path, column, team):
    with open(path, newline="") as f:
        rows = [r for r in csv.DictReader(f) if team is None or r.get("team") == team]
    return [float(r[column]) for r in rows]


def tidegate_sse(binary, path, column, team, model):
    cmd = [binary, "forecast", "--input", path, "--column", column, "--horizon", "24",
           "--model", model, "-o", "json"]
    if team is not None:
        cmd += ["--where", "team=" + team]
    out = subprocess.run(cmd, check=True, capture_output=True, text=True).stdout
    result = json.loads(out)
    return result["fit"]["sse"], result["params"]


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--tidegate", required=True)
    parser.add_argument("--data", required=True)
    args = parser.parse_args()
    try:
        from statsmodels.tsa.holtwinters import ExponentialSmoothing
    except Exception as e:  # ImportError, or a broken numpy/scipy.
        print(f"SKIP: /usr/bin/python3 cannot import statsmodels ({e}); "
              "install Debian's python3-statsmodels to run this cross-check")
        return SKIP

    failures = 0
    print(f"{'series':<46} {'model':<24} {'tidegate SSE':>14} {'statsmodels SSE':>16} {'ratio':>7}")
    for name, column, team, trend, damped in CASES:
        path = f"{args.data}/{name}"
        y = load(path, column, team)
        model = model_name(trend, damped)
        ours, params = tidegate_sse(args.tidegate, path, column, team, model)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            fit = ExponentialSmoothing(y, trend=trend, damped_trend=damped, seasonal="add",
                                       seasonal_periods=24).fit()
        theirs = float(fit.sse)
        ratio = ours / theirs if theirs > 0 else (1.0 if ours == 0 else float("inf"))
        ok = ours <= theirs * TOLERANCE or ours <= 1e-9
        failures += 0 if ok else 1
        label = f"{name}:{column}" + (f"[{team}]" if team else "")
        print(f"{label:<46} {model:<24} {ours:>14.6g} {theirs:>16.6g} {ratio:>7.4f}"
              f"{'' if ok else '  FAIL (over 1%)'}")
        if not ok:
            print(f"  tidegate params: {params}")
            print(f"  statsmodels params: { {k: v for k, v in fit.params.items() if k.startswith(('smoothing', 'damping'))} }")
    print(f"{len(CASES) - failures} of {len(CASES)} within 1% of statsmodels or lower")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
