/* SPDX-License-Identifier: BSD-3-Clause
 * A client of rnicd for tests/rnicd/operator.py (RNIC_DAEMON names the daemon's socket):
 *   rnicd_client open      open the first device; "open: ok" or "open: <error>"
 *   rnicd_client open-all  open every device at once (one connection each, plus the one listing them)
 *   rnicd_client qps N     on the first device, create RC QPs until N or a refusal; "qps: K <error|ok>"
 * Exits 0 when everything asked for worked, 3 when the daemon refused (the error printed), 1 otherwise.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rnic.h"

#define MAX_QPS 1024

static int
open_devices(int all)
{
	struct rnic_context *ctx[8];
	struct rnic_device **list;
	int n = 0, opened = 0, err = 0;

	list = rnic_get_device_list(&n);
	if (list == NULL || n == 0) {
		printf("open: no device listed\n");
		return 1;
	}
	for (int i = 0; i < (all ? n : 1) && i < 8; i++) {
		ctx[i] = rnic_open_device(list[i]);
		if (ctx[i] == NULL) {
			err = errno;
			break;
		}
		opened++;
	}
	rnic_free_device_list(list);
	printf("open: %s (%d devices opened)\n", err != 0 ? strerror(err) : "ok", opened);
	for (int i = 0; i < opened; i++)
		rnic_close_device(ctx[i]);
	return err == 0 ? 0 : err == EDQUOT ? 3 : 1;
}

static int
create_qps(int want)
{
	struct rnic_device **list = rnic_get_device_list(NULL);
	struct rnic_context *ctx = list != NULL && list[0] != NULL ? rnic_open_device(list[0]) : NULL;
	static struct rnic_qp *qp[MAX_QPS];
	struct rnic_pd *pd;
	struct rnic_cq *cq;
	int n = 0, err = 0;

	rnic_free_device_list(list);
	if (ctx == NULL) {
		printf("qps: 0 %s\n", strerror(errno));
		return 1;
	}
	pd = rnic_alloc_pd(ctx);
	cq = pd != NULL ? rnic_create_cq(ctx, 16, NULL, NULL, 0) : NULL;
	if (cq == NULL) {
		printf("qps: 0 no PD or CQ: %s\n", strerror(errno));
		return 1;
	}
	for (; n < want && n < MAX_QPS; n++) {
		struct rnic_qp_init_attr attr = {
			.send_cq = cq, .recv_cq = cq, .qp_type = RNIC_QPT_RC,
			.cap = { .max_send_wr = 4, .max_recv_wr = 4, .max_send_sge = 1, .max_recv_sge = 1 },
		};

		qp[n] = rnic_create_qp(pd, &attr);
		if (qp[n] == NULL) {
			err = errno;
			break;
		}
	}
	printf("qps: %d %s\n", n, err != 0 ? strerror(err) : "ok");
	for (int i = 0; i < n; i++)
		rnic_destroy_qp(qp[i]);
	rnic_destroy_cq(cq);
	rnic_dealloc_pd(pd);
	rnic_close_device(ctx);
	return err == 0 ? 0 : err == EDQUOT ? 3 : 1;
}

int
main(int argc, char **argv)
{
	int ret;

	setvbuf(stdout, NULL, _IOLBF, 0);
	if (rnic_engine_init(1, argv) < 0) {
		printf("client mode: %s\n", strerror(errno));
		return 1;
	}
	if (argc == 2 && strcmp(argv[1], "open") == 0)
		ret = open_devices(0);
	else if (argc == 2 && strcmp(argv[1], "open-all") == 0)
		ret = open_devices(1);
	else if (argc == 3 && strcmp(argv[1], "qps") == 0)
		ret = create_qps(atoi(argv[2]));
	else {
		fprintf(stderr, "usage: rnicd_client open | open-all | qps N\n");
		ret = 2;
	}
	rnic_engine_fini();
	return ret;
}
