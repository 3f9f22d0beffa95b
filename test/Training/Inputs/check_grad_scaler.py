"""Checks an mp-run --step-log against GradScaler's rules, for a run whose
every step sees the same batch:
  * a skipped step halves the scale (backoff 0.5), restarts the count of
    clean steps, and leaves the parameters alone: the next loss is equal;
  * a clean step updates the parameters (the next loss differs), and every
    `interval` consecutive clean steps the scale doubles (growth 2).
Usage: check_grad_scaler.py STEPS.csv INIT_SCALE INTERVAL"""
import csv
import sys

path, scale, interval = sys.argv[1], float(sys.argv[2]), int(sys.argv[3])
rows = list(csv.DictReader(open(path)))
clean_run = growths = skipped = 0
for i, row in enumerate(rows):
    loss, skip, new_scale = float(row["loss"]), int(float(row["skipped"])), float(row["loss_scale"])
    nxt = float(rows[i + 1]["loss"]) if i + 1 < len(rows) else None
    where = f"step {row['step']}"
    if skip:
        skipped += 1
        clean_run = 0
        assert new_scale == scale * 0.5, f"{where}: skipped, scale {scale} -> {new_scale}"
        assert nxt is None or nxt == loss, f"{where}: skipped but the loss changed"
    else:
        clean_run += 1
        want = scale
        if clean_run == interval:
            want, clean_run, growths = scale * 2, 0, growths + 1
        assert new_scale == want, f"{where}: clean, scale {scale} -> {new_scale}, want {want}"
        assert nxt is None or nxt != loss, f"{where}: clean but the loss did not change"
    scale = new_scale
print(f"{len(rows)} steps, {skipped} skipped, {growths} growths: GradScaler's rules hold")
