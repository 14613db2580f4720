/* SPDX-License-Identifier: BSD-3-Clause
 * The CM messages' codec (lib/cm/rnic_cm_msg.c): fields where IBA's tables put them, in the bytes of the MAD
 * (offsets counted from the MAD's start: the 24-byte header, then the message), and every message decoded
 * back to what was encoded.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "rnic_cm_msg.h"
#include "rnic_gsi.h"

static struct rnic_cm_msg
full_req(void)
{
	struct rnic_cm_msg m = {
		.attr_id = RNIC_CM_REQ, .tid = 0x0102030405060708ull, .local_comm_id = 0xa1b2c3d4,
		.service_id = 0x0000000001064e21ull, .local_ca_guid = 0x1122334455667788ull,
		.local_qkey = 0, .local_qpn = 0xabcdef, .responder_resources = 4, .initiator_depth = 3,
		.remote_cm_response_timeout = 20, .transport_type = RNIC_CM_TRANSPORT_RC, .flow_control = 1,
		.starting_psn = 0x123456, .local_cm_response_timeout = 19, .retry_count = 7, .pkey = 0xffff,
		.path_mtu = 3, .rnr_retry_count = 6, .max_cm_retries = 15, .srq = 1,
		.primary_local_lid = 0xffff, .primary_remote_lid = 0xffff, .flow_label = 0xfffff,
		.packet_rate = 0x3f, .traffic_class = 0x28, .hop_limit = 64, .sl = 0xf, .subnet_local = 1,
		.local_ack_timeout = 18,
	};

	for (int i = 0; i < 16; i++) {
		m.primary_local_gid.raw[i] = (uint8_t)(0x10 + i);
		m.primary_remote_gid.raw[i] = (uint8_t)(0x30 + i);
	}
	for (int i = 0; i < RNIC_CM_REQ_PRIVATE; i++)
		m.private_data[i] = (uint8_t)(i + 1);
	return m;
}

static void
test_req_layout(void **state)
{
	struct rnic_cm_msg m = full_req(), d;
	uint8_t mad[RNIC_MAD_SIZE];

	(void)state;
	assert_int_equal(rnic_cm_encode(&m, mad), 0);
	/* The MAD header: base version 1, class 0x07, version 2, Send, the TID, attribute 0x0010. */
	assert_int_equal(mad[0], 1);
	assert_int_equal(mad[1], 0x07);
	assert_int_equal(mad[2], 2);
	assert_int_equal(mad[3], 0x03);
	assert_int_equal(mad[8], 0x01);
	assert_int_equal(mad[15], 0x08);
	assert_int_equal(mad[16], 0x00);
	assert_int_equal(mad[17], 0x10);
	/* Table 106, at 24 + the message's byte. */
	assert_int_equal(mad[24], 0xa1);
	assert_int_equal(mad[27], 0xd4);
	assert_int_equal(mad[24 + 8 + 5], 0x06);	/* service ID 0x...0106 4e21 */
	assert_int_equal(mad[24 + 8 + 6], 0x4e);
	assert_int_equal(mad[24 + 16], 0x11);
	assert_int_equal(mad[24 + 32], 0xab);		/* local QPN, then responder resources */
	assert_int_equal(mad[24 + 34], 0xef);
	assert_int_equal(mad[24 + 35], 4);
	assert_int_equal(mad[24 + 39], 3);		/* initiator depth */
	assert_int_equal(mad[24 + 43], (20 << 3) | (0 << 1) | 1);	/* response timeout, RC, flow control */
	assert_int_equal(mad[24 + 44], 0x12);
	assert_int_equal(mad[24 + 46], 0x56);
	assert_int_equal(mad[24 + 47], (19 << 3) | 7);	/* local response timeout, retry count */
	assert_int_equal(mad[24 + 48], 0xff);
	assert_int_equal(mad[24 + 50], (3 << 4) | (0 << 3) | 6);	/* MTU, RDC, RNR retry count */
	assert_int_equal(mad[24 + 51], (15 << 4) | (1 << 3) | 0);	/* max CM retries, SRQ */
	assert_int_equal(mad[24 + 52], 0xff);
	assert_int_equal(mad[24 + 56], 0x10);		/* local GID */
	assert_int_equal(mad[24 + 72], 0x30);		/* remote GID */
	assert_int_equal(mad[24 + 88], 0xff);		/* flow label: 20 bits, then 6 reserved, 6 of rate */
	assert_int_equal(mad[24 + 90], 0xf0);
	assert_int_equal(mad[24 + 91], 0x3f);
	assert_int_equal(mad[24 + 92], 0x28);
	assert_int_equal(mad[24 + 93], 64);
	assert_int_equal(mad[24 + 94], (0xf << 4) | (1 << 3));	/* SL, subnet local */
	assert_int_equal(mad[24 + 95], 18 << 3);	/* local ACK timeout */
	for (int i = 96; i < 140; i++)
		assert_int_equal(mad[24 + i], 0);	/* no alternate path */
	assert_int_equal(mad[24 + 140], 1);
	assert_int_equal(mad[255], RNIC_CM_REQ_PRIVATE);
	assert_int_equal(rnic_cm_decode(mad, &d), 0);
	assert_memory_equal(&d, &m, sizeof(d));
}

static void
test_rep_layout(void **state)
{
	struct rnic_cm_msg m = {
		.attr_id = RNIC_CM_REP, .tid = 7, .local_comm_id = 0x01020304, .remote_comm_id = 0x05060708,
		.local_qpn = 0x000102, .starting_psn = 0xfedcba, .responder_resources = 1, .initiator_depth = 2,
		.target_ack_delay = 17, .failover_accepted = 2, .flow_control = 1, .rnr_retry_count = 7, .srq = 1,
		.local_ca_guid = 0x8877665544332211ull,
	}, d;
	uint8_t mad[RNIC_MAD_SIZE];

	(void)state;
	memset(m.private_data, 0xee, RNIC_CM_REP_PRIVATE);
	assert_int_equal(rnic_cm_encode(&m, mad), 0);
	assert_int_equal(mad[17], 0x13);
	assert_int_equal(mad[24 + 4], 0x05);
	assert_int_equal(mad[24 + 14], 0x02);
	assert_int_equal(mad[24 + 20], 0xfe);
	assert_int_equal(mad[24 + 26], (17 << 3) | (2 << 1) | 1);
	assert_int_equal(mad[24 + 27], (7 << 5) | (1 << 4));
	assert_int_equal(mad[24 + 28], 0x88);
	assert_int_equal(mad[24 + 36], 0xee);
	assert_int_equal(rnic_cm_decode(mad, &d), 0);
	assert_memory_equal(&d, &m, sizeof(d));
}

static void
test_others_round_trip(void **state)
{
	static const uint16_t ids[] = { RNIC_CM_MRA, RNIC_CM_REJ, RNIC_CM_RTU, RNIC_CM_DREQ, RNIC_CM_DREP };
	static const unsigned int lens[] = { 222, 148, 224, 220, 224 };
	uint8_t mad[RNIC_MAD_SIZE];

	(void)state;
	for (unsigned int i = 0; i < 5; i++) {
		struct rnic_cm_msg m = { .attr_id = ids[i], .tid = i, .local_comm_id = 0x11 + i,
					 .remote_comm_id = 0x22 + i }, d;

		if (ids[i] == RNIC_CM_MRA) {
			m.message = RNIC_CM_ABOUT_REP;
			m.service_timeout = 21;
		} else if (ids[i] == RNIC_CM_REJ) {
			m.message = RNIC_CM_ABOUT_REQ;
			m.reason = RNIC_CM_REJ_INVALID_SERVICE_ID;
			m.ari_length = 0;
		} else if (ids[i] == RNIC_CM_DREQ) {
			m.remote_qpn = 0x654321;
		}
		memset(m.private_data, 0x5a, lens[i]);
		assert_int_equal(rnic_cm_private_len(ids[i]), lens[i]);
		assert_int_equal(rnic_cm_encode(&m, mad), 0);
		assert_int_equal(mad[RNIC_MAD_SIZE - 1], 0x5a);		/* private data fills the MAD */
		assert_int_equal(rnic_cm_decode(mad, &d), 0);
		assert_memory_equal(&d, &m, sizeof(d));
		if (ids[i] == RNIC_CM_REJ)
			assert_int_equal(mad[24 + 11], 8);		/* reason at byte 10 */
		if (ids[i] == RNIC_CM_MRA)
			assert_int_equal(mad[24 + 9], 21 << 3);
		if (ids[i] == RNIC_CM_DREQ)
			assert_int_equal(mad[24 + 8], 0x65);
	}
	assert_string_equal(rnic_cm_attr_name(RNIC_CM_RTU), "ReadyToUse");
}

static void
test_unknown_attribute(void **state)
{
	struct rnic_cm_msg m = { .attr_id = 0x0017 };	/* LAP: not spoken */
	uint8_t mad[RNIC_MAD_SIZE] = { 1, 0x07, 2, 3, [17] = 0x17 };

	(void)state;
	assert_int_equal(rnic_cm_encode(&m, mad), -EINVAL);
	assert_int_equal(rnic_cm_decode(mad, &m), -EINVAL);
	assert_int_equal(rnic_cm_private_len(0x0017), 0);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_req_layout),
		cmocka_unit_test(test_rep_layout),
		cmocka_unit_test(test_others_round_trip),
		cmocka_unit_test(test_unknown_attribute),
	};

	return cmocka_run_group_tests_name("cm_msg", tests, NULL, NULL);
}
