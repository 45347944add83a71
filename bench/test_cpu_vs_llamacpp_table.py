#!/usr/bin/env python3
"""Self-test of bench/cpu_vs_llamacpp_table.py: python3 bench/test_cpu_vs_llamacpp_table.py

Ratios, goal marks, medians over repeats, and the whole table from a made-up OUT directory.
Standard library only; no server, no model.
"""
import json
import os
import sys
import tempfile
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import cpu_vs_llamacpp_table as table  # noqa: E402

C8 = {"name": "c8-128-128", "input_len": 128, "output_len": 128, "max_concurrency": 8, "request_rate": None}
PREFILL = {"name": "prefill-2048-16", "input_len": 2048, "output_len": 16, "max_concurrency": 1, "request_rate": None}
POISSON = {"name": "poisson0.75-128-128", "input_len": 128, "output_len": 128, "max_concurrency": None,
           "request_rate": 0.75}


def result(tok_s, ttft_ms, tpot_ms, itl_p99_ms, completed=4, failed=0, input_tokens=128):
    return {"completed": completed, "failed": failed, "output_throughput": tok_s,
            "median_ttft_ms": ttft_ms, "p99_ttft_ms": ttft_ms * 2, "median_tpot_ms": tpot_ms,
            "p99_itl_ms": itl_p99_ms, "total_input_tokens": input_tokens * completed}


def stats(tok_s, ttft_ms, tpot_ms, itl_p99_ms, rss_kb, input_tokens=128):
    return table.combine([table.run_metrics(result(tok_s, ttft_ms, tpot_ms, itl_p99_ms, input_tokens=input_tokens),
                                            rss_kb)])


class RatioAndGoals(unittest.TestCase):
    def test_ratio(self):
        self.assertAlmostEqual(table.ratio(130.0, 100.0), 1.3)
        self.assertIsNone(table.ratio(None, 100.0))
        self.assertIsNone(table.ratio(1.0, None))
        self.assertIsNone(table.ratio(1.0, 0))

    def test_at_least_is_inclusive(self):
        self.assertEqual(table.at_least(1.3, 1.3), table.MET)
        self.assertEqual(table.at_least(1.299, 1.3), table.NOT_MET)
        self.assertEqual(table.at_least(None, 1.3), table.NO_DATA)

    def test_at_most_is_inclusive(self):
        self.assertEqual(table.at_most(10.0, 10.0), table.MET)
        self.assertEqual(table.at_most(10.1, 10.0), table.NOT_MET)
        self.assertEqual(table.at_most(None, 10.0), table.NO_DATA)
        self.assertEqual(table.at_most(10.0, None), table.NO_DATA)

    def test_goals_of_a_closed_loop_scenario(self):
        ours = stats(140.0, 300.0, 50.0, 120.0, 900_000)
        llama = stats(100.0, 500.0, 60.0, 110.0, 600_000)
        self.assertEqual(table.goals(C8, ours, llama), {
            "output tok/s >= 1.3x": table.MET,  # 1.4x
            "TPOT p50 <=": table.MET,
            "ITL p99 <=": table.NOT_MET,  # 120 > 110
            "peak RSS <=": table.NOT_MET,
        })

    def test_prefill_goal_is_llama_ttft_over_ours(self):
        ours = stats(10.0, 1_000.0, 10.0, 20.0, 500_000, input_tokens=2048)
        self.assertEqual(table.goals(PREFILL, ours, stats(8.0, 1_500.0, 11.0, 21.0, 600_000))["prefill >= 1.5x"],
                         table.MET)
        self.assertEqual(table.goals(PREFILL, ours, stats(8.0, 1_490.0, 11.0, 21.0, 600_000))["prefill >= 1.5x"],
                         table.NOT_MET)
        self.assertAlmostEqual(ours["prefill_tok_s"], 2048.0)
        self.assertNotIn("prefill >= 1.5x", table.goals(C8, ours, ours))

    def test_offered_load(self):
        self.assertEqual(table.at_offered_load(POISSON, stats(95.0, 1, 1, 1, 1), stats(90.0, 1, 1, 1, 1)), 96.0)
        self.assertIsNone(table.at_offered_load(POISSON, stats(95.0, 1, 1, 1, 1), stats(70.0, 1, 1, 1, 1)))
        self.assertIsNone(table.at_offered_load(C8, stats(95.0, 1, 1, 1, 1), stats(95.0, 1, 1, 1, 1)))


class OutputCount(unittest.TestCase):
    def test_share_of_generated_tokens_and_its_note(self):
        exact = table.combine([table.run_metrics(result(1.0, 1.0, 1.0, 1.0, completed=4), 1)])
        exact["output_tokens"] = 4 * 128
        short = dict(exact, output_tokens=4 * 128 - 8)
        self.assertEqual(table.output_count_share(C8, exact), 1.0)
        self.assertAlmostEqual(table.output_count_share(C8, short), 504 / 512)
        self.assertEqual(table.scenario_notes(C8, exact, exact), [])
        notes = table.scenario_notes(C8, exact, short)
        self.assertEqual(len(notes), 1)
        self.assertIn("98.4% of llama.cpp's output tokens (504 of 512", notes[0])
        self.assertIsNone(table.output_count_share(C8, dict(exact, output_tokens=None)))


class Repeats(unittest.TestCase):
    def test_medians_and_sums(self):
        runs = [table.run_metrics(result(t, 100.0, 10.0, 20.0, completed=4, failed=f), rss)
                for t, f, rss in ((100.0, 0, 3), (130.0, 1, 1), (120.0, 0, 2))]
        combined = table.combine(runs)
        self.assertEqual(combined["output_tok_s"], 120.0)
        self.assertEqual(combined["peak_rss_kb"], 2)
        self.assertEqual((combined["completed"], combined["failed"], combined["num_runs"]), (12, 1, 3))

    def test_no_runs(self):
        combined = table.combine([])
        self.assertIsNone(combined["output_tok_s"])
        self.assertEqual(combined["num_runs"], 0)

    def test_failed_counted_from_errors_when_absent(self):
        r = result(1.0, 1.0, 1.0, 1.0)
        del r["failed"]
        r["errors"] = ["", "timeout", ""]
        self.assertEqual(table.run_metrics(r, None)["failed"], 1)


class WholeTable(unittest.TestCase):
    def test_render_from_an_out_directory(self):
        with tempfile.TemporaryDirectory() as out:
            meta = {"date": "2026-11-26T00:00:00Z", "commit": "abc1234", "repeats": 1, "kv_tokens": 18432,
                    "scenarios": [dict(C8, num_prompts=4), dict(PREFILL, num_prompts=4)]}
            with open(os.path.join(out, "meta.json"), "w") as f:
                json.dump(meta, f)
            runs = [("c8-128-128", "pagoda", result(140.0, 300.0, 50.0, 100.0), 900_000),
                    ("c8-128-128", "llama.cpp", result(100.0, 500.0, 60.0, 110.0), 600_000),
                    ("prefill-2048-16", "pagoda", result(10.0, 1_000.0, 10.0, 20.0, input_tokens=2048), 500_000),
                    ("prefill-2048-16", "llama.cpp", None, 600_000)]
            rows = ["scenario\tserver\trepeat\tresult\tpeak_rss_kb\tclient_exit\tother_cpu_pct"]
            for scenario, server, res, rss in runs:
                path = f"results/{scenario}/{server}-r1.json"
                if res is not None:
                    os.makedirs(os.path.join(out, "results", scenario), exist_ok=True)
                    with open(os.path.join(out, path), "w") as f:
                        json.dump(res, f)
                rows.append(f"{scenario}\t{server}\t1\t{path}\t{rss}\t{0 if res else 1}\t{len(rows) * 1.5}")
            with open(os.path.join(out, "runs.tsv"), "w") as f:
                f.write("\n".join(rows) + "\n")
            runs, loads = table.read_runs(out)
            text = table.render(meta, runs, loads)
        self.assertIn("| 140.0 / 100.0 (1.40×) |", text)
        self.assertIn("| 879 / 586 (1.50×) |", text)  # peak RSS in MiB
        self.assertIn("| c8-128-128 | met | met | met | **not met** | n/a |", text)
        self.assertIn("| prefill-2048-16 | no data | no data | no data | met | no data |", text)
        self.assertIn("**Goals met: 4 of 9.**", text)
        self.assertIn("prefill-2048-16: llama.cpp has failed or missing runs", text)
        self.assertIn("Other processes took 1.5–6.0% of the machine's CPU", text)

    def test_meta_from_env(self):
        env = {name: "x" for name in table.META_STRINGS.values()}
        env.update({name: "2" for name in table.META_INTEGERS.values()})
        env["META_SCENARIOS"] = "c8-128-128 128 128 8 inf 64\npoisson1.5-128-128 128 128 0 1.5 96"
        env["NUM_PROMPTS"] = ""
        meta = table.meta_from_env(env)
        self.assertEqual(meta["scenarios"][0], dict(C8, num_prompts=64))
        self.assertEqual(meta["scenarios"][1]["request_rate"], 1.5)
        self.assertIsNone(meta["scenarios"][1]["max_concurrency"])
        env["NUM_PROMPTS"] = "3"
        self.assertEqual([s["num_prompts"] for s in table.meta_from_env(env)["scenarios"]], [3, 3])


if __name__ == "__main__":
    unittest.main()
