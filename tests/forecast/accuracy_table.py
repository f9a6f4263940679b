#!/usr/bin/python3
"""Backtest accuracy on the real traces, as a Markdown table.

Runs `tidegate forecast --horizon 168 -o json` on Philly's hourly demand and
submissions (its analysis window, 2017-09-25 to 2017-12-10: the trace is
sparse outside it) and on every Helios Earth virtual cluster's demand, and
prints each model's rolling-origin MASE (scaled by the in-sample error of the
daily seasonal naive forecast; lower is better) with the model that
`tidegate forecast` chooses. Standard library only.

  /usr/bin/python3 tests/forecast/accuracy_table.py --tidegate build/bin/tidegate \
      --data tests/data
"""
import argparse
import csv
import json
import math
import subprocess
import sys

MODELS = ["seasonal_naive_24", "seasonal_naive_168", "holt_winters_24_damped",
          "holt_winters_24_168_damped", "combination"]
SHORT = {"seasonal_naive_24": "SN 24", "seasonal_naive_168": "SN 168",
         "holt_winters_24_damped": "HW 24 damped",
         "holt_winters_24_168_damped": "HW 24+168 damped", "combination": "combination"}


def run(binary, path, column, where):
    cmd = [binary, "forecast", "--input", path, "--column", column, "--horizon", "168",
           "-o", "json"]
    for w in where:
        cmd += ["--where", w]
    return json.loads(subprocess.run(cmd, check=True, capture_output=True, text=True).stdout)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--tidegate", required=True)
    parser.add_argument("--data", required=True)
    args = parser.parse_args()

    philly = f"{args.data}/philly-pollux.hourly.csv"
    helios = f"{args.data}/helios-earth-vc-seq.timeseries.csv"
    series = [("Philly demand_gpus", philly, "demand_gpus", ["in_analysis_window=1"]),
              ("Philly submitted_gpus", philly, "submitted_gpus", ["in_analysis_window=1"])]
    with open(helios, newline="") as f:
        teams = sorted({row["team"] for row in csv.DictReader(f)})
    series += [(f"Helios {t} demand_gpus", helios, "demand_gpus", [f"team={t}"]) for t in teams]

    print("| series | hours | " + " | ".join(SHORT[m] for m in MODELS) + " | chosen | chosen vs best SN |")
    print("| --- | ---: | " + " | ".join("---:" for _ in MODELS) + " | --- | ---: |")
    ratios = []
    wins = 0
    for label, path, column, where in series:
        r = run(args.tidegate, path, column, where)
        mase = {c["model"]: c.get("mase") for c in r["backtest"]["candidates"]}
        cells = []
        for m in MODELS:
            v = mase.get(m)
            cells.append("skipped" if v is None else f"{v:.3f}")
        best_sn = min(v for m, v in mase.items() if m.startswith("seasonal_naive") and v is not None)
        chosen = r["backtest"]["mase"]
        ratio = chosen / best_sn if best_sn > 0 else 1.0
        ratios.append(ratio)
        wins += chosen < best_sn
        print(f"| {label} | {r['rows']} | " + " | ".join(cells) +
              f" | {SHORT.get(r['model'], r['model'])} | {ratio:.3f} |")
    geo = math.exp(sum(math.log(max(x, 1e-12)) for x in ratios) / len(ratios))
    print(f"\nChosen model beats the best seasonal naive on {wins} of {len(series)} series; "
          f"geometric mean of chosen/best-SN MASE: {geo:.3f}.")
    return 0


if __name__ == "__main__":
    sys.exit(main())
