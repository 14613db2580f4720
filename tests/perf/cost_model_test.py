"""scripts/cost_model.py on canned data, no DPDK: the trimmed stage means, the per-stage fit (ns per message,
per byte, many-QP term, per map), the bottleneck lcore's sum as the predicted rate, the fitted lcore and
application overheads, the 100 Gb/s arithmetic; a model that does not match the data (stages summed on one
lcore while they ran on two) fails its 15 % check; and a saved real run (tests/perf/cost-run.json) models
with every figure present.  Usage: cost_model_test.py SCRIPTS_DIR CANNED_RUN
"""
import copy
import json
import sys
import unittest

sys.path.insert(0, sys.argv.pop(1))
RUN = sys.argv.pop(1)
import cost_model as cm  # noqa: E402

# Known costs, ns per message: (a, b per payload byte, q for many QPs), per map; overheads.
COSTS = {
    "one": {"rnic0/requester": (150, 0.20, 80), "rnic0/parser": (5, 0, 3), "rnic0/completer": (40, 0, 20),
            "rnic1/parser": (70, 0.05, 30), "rnic1/responder": (60, 0.03, 10)},
    "host": {"rnic0/requester": (200, 0.25, 90), "rnic0/parser": (6, 0, 3), "rnic0/completer": (60, 0.01, 25),
             "rnic1/parser": (90, 0.16, 35), "rnic1/responder": (70, 0.13, 12)},
}
O_LCORE, O_APP = 120.0, 250.0
SPECS = [(64, 1, False), (4096, 1, False), (64, 65536, True)]
MESSAGES = 1000


def true_ns(m, key, size, many):
    a, b, q = COSTS[m][key]
    return a + b * size + q * many


def synthetic(serial=False, outliers=False):
    """A saved run whose histograms hold the known costs (1-ns buckets: a bucket's middle is its ns; every
    unit of a stage in one bucket, units = messages) and whose rates are the bottleneck lcore's by hand; with
    serial, every lcore's work added up instead (a wrong model for a 2-lcore map)."""
    data = {"bucket_ns": [[i - 0.5, i + 0.5] for i in range(20000)], "cases": []}
    for m in ("one", "host"):
        for size, qps, many in SPECS:
            stages, app, worker = {}, O_APP, O_LCORE
            if m == "host":
                app += O_LCORE
            for key in COSTS[m]:
                ns = round(true_ns(m, key, size, many))
                buckets = [[ns, MESSAGES]]
                if outliers:    # 0.5 % of units preempted for a millisecond-ish: trimmed away
                    buckets = [[ns, MESSAGES - 5], [19999, 5]]
                stages[key] = {"count": MESSAGES, "buckets": buckets}
                if m == "host" and key.split("/")[1] in ("requester", "completer"):
                    app += ns
                else:
                    worker += ns
            t = app + worker if serial and m == "host" else max(app, worker)
            for jitter in (0.97, 1.0, 1.05):    # three runs: the median is the middle one
                data["cases"].append({"name": f"{m}_{size}_{qps}", "map": m, "size": size, "qps": qps, "many": many,
                                      "mpps": 1e3 / t * jitter, "messages": MESSAGES, "stages": stages})
    return data


def lines(out, kind):
    return [x for x in out if kind in x]


class Synthetic(unittest.TestCase):
    def setUp(self):
        self.out = cm.model(synthetic(), 0.15)

    def test_fit_recovers_costs(self):
        for f in lines(self.out, "fit"):
            a, b, q = COSTS[f["map"]][f["fit"]]
            self.assertAlmostEqual(f["a_ns"], a, delta=1.0, msg=f)
            self.assertAlmostEqual(f["b_ns_per_byte"], b, delta=0.001, msg=f)
            self.assertAlmostEqual(f["many_qps_ns"], q, delta=1.0, msg=f)
        self.assertEqual(len(lines(self.out, "fit")), 10)

    def test_overheads_recovered(self):
        o = lines(self.out, "overhead")[0]["overhead"]
        self.assertAlmostEqual(o["o_lcore_ns"], O_LCORE, delta=3.0)
        self.assertAlmostEqual(o["o_app_ns"], O_APP, delta=15.0)  # only binds where the app lcore is the bottleneck

    def test_predictions_are_the_bottleneck(self):
        cases = lines(self.out, "case")
        self.assertEqual(len(cases), 6)
        for c in cases:
            self.assertLess(abs(c["error"]), 0.01, c)
            self.assertAlmostEqual(c["predicted_mpps"], 1e3 / max(c["ns_per_msg"].values()), places=3)
        host64 = next(c for c in cases if c["case"] == "host_64_1")
        app = O_APP + O_LCORE + true_ns("host", "rnic0/requester", 64, 0) + true_ns("host", "rnic0/completer", 64, 0)
        self.assertAlmostEqual(host64["ns_per_msg"]["app"], app, delta=5.0)
        self.assertEqual(host64["bottleneck"], "app")
        self.assertEqual(next(c for c in cases if c["case"] == "one_4096_1")["bottleneck"], "worker")
        self.assertTrue(self.out[-1]["pass"])
        self.assertEqual(self.out[-1]["max_spread"], round(1.05 / 0.97, 2))

    def test_100g(self):
        p = next(x for x in lines(self.out, "predict") if x["size"] == 4096 and not x["many_qps"])
        rate = 100e9 / 8 / (4096 + 98)
        self.assertAlmostEqual(p["line_mpps"], rate / 1e6, places=2)
        ns = O_LCORE + sum(true_ns("one", k, 4096, 0) for k in COSTS["one"] if k.startswith("rnic1/"))
        self.assertAlmostEqual(p["responder_end"]["ns_per_msg"], ns, delta=3.0)
        self.assertAlmostEqual(p["responder_end"]["lcores"], rate * ns * 1e-9, delta=0.02)
        many = next(x for x in lines(self.out, "predict") if x["size"] == 64 and x["many_qps"])
        few = next(x for x in lines(self.out, "predict") if x["size"] == 64 and not x["many_qps"])
        self.assertGreater(many["requester_end"]["lcores"], few["requester_end"]["lcores"])


class Model(unittest.TestCase):
    def test_preempted_units_trimmed(self):
        self.assertLess(abs(lines(cm.model(synthetic(outliers=True), 0.15), "case")[0]["error"]), 0.01)

    def test_wrong_model_fails(self):
        # rates of a 2-lcore map as if its stages ran one after another: the bottleneck model cannot fit them
        out = cm.model(synthetic(serial=True), 0.15)
        self.assertFalse(out[-1]["pass"], out[-1])
        self.assertGreater(out[-1]["worst_error"], 0.15)

    def test_untold_terms_refused(self):
        data = synthetic()
        for c in data["cases"]:
            c["many"] = c["size"] == 4096    # many QPs exactly where the size is 4 KB: the terms cannot be told apart
        with self.assertRaises(ValueError):
            cm.model(data, 0.15)


class Canned(unittest.TestCase):
    def test_saved_run(self):
        with open(RUN) as f:
            data = json.load(f)
        out = cm.model(copy.deepcopy(data), 0.15)
        cases = lines(out, "case")
        self.assertEqual({c["map"] for c in cases}, {"one", "host"})
        self.assertEqual(len(cases), 6)
        for c in cases:
            self.assertGreater(c["predicted_mpps"], 0)
            self.assertAlmostEqual(c["error"], c["predicted_mpps"] / c["measured_mpps"] - 1, delta=1e-3)
        preds = lines(out, "predict")
        self.assertEqual(len(preds), 4)
        for p in preds:
            self.assertGreater(p["requester_end"]["lcores"], 0)
        # each map's fit goes through its cases' mean stage costs (3 cases, 3 terms)
        runs = cm.stage_ns(copy.deepcopy(data))
        fit = cm.fit_stages(runs)
        for name, group in cm.by_name(runs).items():
            for key in group[0]["ns"]:
                mean = sum(r["ns"][key] for r in group) / len(group)
                self.assertAlmostEqual(cm.fitted_ns(fit, group[0]["map"], key, group[0]["size"], group[0]["many"]),
                                       mean, delta=1e-6 * max(1.0, mean), msg=(name, key))
        self.assertEqual(out[-1]["pass"], out[-1]["worst_error"] <= 0.15)


if __name__ == "__main__":
    unittest.main(verbosity=2)
