"""scripts/bench.py's logic on canned runs, no DPDK: the machine's modes told apart by the probes
(scripts/bench_modes.py), each figure paired with its own mode's probes, targets per mode ("not seen" for a
mode that never came), the 1.3x spread flag and its cause; and the port runner's ratios
(scripts/bench_ports.py summarize). Usage: bench_modes_test.py SCRIPTS_DIR
"""
import sys
import unittest

sys.path.insert(0, sys.argv.pop(1))
import bench_modes as bm  # noqa: E402
import bench_ports  # noqa: E402

SLOW = [25.2, 26.0, 27.3, 28.2, 26.5]
FAST = [44.0, 47.5, 45.1]


def runs(pairs, copy=200.0):
    """[(value, probe Mpps)] as the runner keeps them."""
    return [{"value": v, "probe": p, "copy": copy} for v, p in pairs]


class Split(unittest.TestCase):
    def test_two_modes(self):
        sp = bm.split(SLOW + FAST)
        self.assertTrue(28.2 < sp["threshold"] < 44.0, sp)
        self.assertEqual((sp["slow_runs"], sp["fast_runs"]), (5, 3))
        self.assertEqual([bm.mode_of(r, sp) for r in (25.2, 28.2, 44.0)], [bm.SLOW, bm.SLOW, bm.FAST])
        self.assertEqual(bm.modes_seen(sp), [bm.FAST, bm.SLOW])

    def test_order_does_not_matter(self):
        self.assertAlmostEqual(bm.split(FAST + SLOW)["threshold"], bm.split(SLOW[::-1] + FAST)["threshold"])

    def test_one_mode(self):
        # noise of a loaded machine within a mode: no split, and the probes cannot name it
        sp = bm.split([25.0, 26.1, 27.9, 24.4, 28.8, 26.6])
        self.assertIsNone(sp["threshold"])
        self.assertEqual(bm.modes_seen(sp), [bm.ONE])
        self.assertEqual(bm.mode_of(100.0, sp), bm.ONE)

    def test_continuous_spread_is_not_split(self):
        # a wide spread with no gap (load coming and going): the centres are apart, the gap is not
        sp = bm.split([20.0, 22.0, 24.2, 26.6, 29.3, 32.2, 35.4, 39.0])
        self.assertIsNone(sp["threshold"], sp)

    def test_single_probe_and_given(self):
        self.assertIsNone(bm.split([30.0])["threshold"])
        sp = bm.split([30.0, 31.0], given=30.5)
        self.assertEqual([bm.mode_of(r, sp) for r in (30.0, 31.0)], [bm.SLOW, bm.FAST])


class PerMode(unittest.TestCase):
    def setUp(self):
        self.sp = bm.split(SLOW + FAST)

    def test_ratio_against_same_mode_probes(self):
        # 64 B WRITE: 4.8 Mpps with the slow probes, 7.6 with the fast ones
        fig = runs([(4.8, 26.0), (4.7, 25.2), (7.6, 47.5), (4.9, 27.3), (7.4, 44.0)])
        pm = bm.per_mode(fig, self.sp)
        self.assertEqual((pm[bm.SLOW]["runs"], pm[bm.FAST]["runs"]), (3, 2))
        self.assertAlmostEqual(pm[bm.SLOW]["forward"], 26.0)
        self.assertAlmostEqual(pm[bm.FAST]["forward"], (47.5 + 44.0) / 2)
        checks = bm.judge([("w", "forward", ">=", 0.17, 22)], {"w": fig}, self.sp)
        by = {c["mode"]: c for c in checks}
        self.assertAlmostEqual(by[bm.SLOW]["value"], 4.8 / 26.0)
        self.assertTrue(by[bm.SLOW]["met"])
        self.assertAlmostEqual(by[bm.FAST]["value"], 7.5 / 45.75)
        self.assertFalse(by[bm.FAST]["met"])

    def test_not_seen(self):
        # READ ran only in the slow mode: its ratio to WRITE is not seen in the fast one
        write = runs([(4.8, 26.0), (7.6, 47.5)])
        read = runs([(4.1, 25.2), (4.0, 27.3)])
        checks = bm.judge([("r", "w", ">=", 0.9, 22), ("w", None, ">=", 4.0, 7), ("x", None, ">=", 1, 7)],
                          {"w": write, "r": read}, self.sp)
        by = {(c["target"], c["mode"]): c for c in checks}
        self.assertFalse(by[("r", bm.FAST)]["seen"])
        self.assertAlmostEqual(by[("r", bm.SLOW)]["value"], 4.05 / 4.8)
        self.assertFalse(by[("r", bm.SLOW)]["met"])
        self.assertTrue(by[("w", bm.FAST)]["met"])
        self.assertNotIn(("x", bm.FAST), by)    # a figure not measured at all: no target line

    def test_copy_and_bound_below(self):
        fig = runs([(44.0, 26.0), (46.0, 27.0)], copy=198.0)
        c = bm.judge([("g", "copy", ">=", 0.4, 22), ("g", None, "<=", 45.0, 7)], {"g": fig}, self.sp)
        self.assertAlmostEqual(c[1]["value"], 45.0 / 198.0)     # the slow mode's line of the first target
        self.assertFalse(c[1]["met"])
        self.assertTrue(c[3]["met"])
        self.assertEqual(c[3]["most"], 45.0)


class Spread(unittest.TestCase):
    def setUp(self):
        self.sp = bm.split(SLOW + FAST)

    def test_issue_22_case(self):
        # the 64 KB verified WRITE of issue 22: 54.8, 11.6, 20.8 Gb/s; one fast run, two slow
        f = bm.spread_flag("g", runs([(54.8, 45.0), (11.6, 26.0), (20.8, 27.0)]), self.sp)
        self.assertAlmostEqual(f["spread"], 54.8 / 11.6)
        self.assertAlmostEqual(f["within"][bm.SLOW], 20.8 / 11.6)
        self.assertIsNone(f["within"][bm.FAST])
        self.assertIn("not the mode switch", f["cause"])
        self.assertEqual([r["mode"] for r in f["runs"]], [bm.FAST, bm.SLOW, bm.SLOW])
        self.assertEqual(f["runs"][1]["probe_mpps"], 26.0)

    def test_mode_switch(self):
        f = bm.spread_flag("w", runs([(4.8, 26.0), (4.7, 25.2), (7.6, 47.5)]), self.sp)
        self.assertEqual(f["cause"], "each mode within the bound: the mode switch")

    def test_no_flag_at_bound(self):
        self.assertIsNone(bm.spread_flag("w", runs([(4.0, 26.0), (5.2, 27.0)]), self.sp))
        self.assertIsNotNone(bm.spread_flag("w", runs([(4.0, 26.0), (5.3, 27.0)]), self.sp))

    def test_within_of_median(self):
        self.assertTrue(bm.within_of_median(runs([(44.3, 1), (43.3, 1), (44.4, 1), (56.0, 1)])))
        self.assertFalse(bm.within_of_median(runs([(44.3, 1), (43.3, 1), (67.1, 1)])))


class Ports(unittest.TestCase):
    def test_ratios(self):
        def run(raw138, msg, raw_mtu, gput):
            return {"raw_138B": {"mpps": raw138}, "write_64B_msg_rate": {"msg_rate_Mpps": msg},
                    "raw_mtu": {"mpps": raw_mtu}, "write_64KB_goodput": {"bw_avg_Gbps": gput, "mtu": 1024}}
        lines = bench_ports.summarize("af_packet", [run(1.0, 0.5, 0.8, 3.0), run(1.2, 0.7, 0.6, 2.0),
                                                    run(0.9, 0.4, 0.7, 5.0)])
        msg, gput = lines
        self.assertEqual(msg["summary"], "port_write_64B_msg_rate")
        self.assertAlmostEqual(msg["ratio"], 0.5 / 1.0)
        self.assertAlmostEqual(gput["baseline_value"], 0.7 * 1024 * 8 / 1e3)
        self.assertAlmostEqual(gput["ratio"], 3.0 / (0.7 * 1024 * 8 / 1e3))
        self.assertEqual(gput["runs"], 3)


if __name__ == "__main__":
    result = unittest.main(exit=False, verbosity=2).result
    ok = result.wasSuccessful()
    print(f"{result.testsRun - len(result.failures) - len(result.errors) if ok else 0} passed, "
          f"{0 if ok else len(result.failures) + len(result.errors)} failed")
    sys.exit(0 if ok else 1)
