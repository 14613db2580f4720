/* SPDX-License-Identifier: BSD-3-Clause
 * Packet capture: every frame a port sends or receives, written to a pcapng file (rte_pcapng) that
 * Wireshark and tshark decode as RoCE. A debugging aid: writing the file costs a syscall per burst.
 */
#ifndef RNIC_CAPTURE_H
#define RNIC_CAPTURE_H

#include <stdint.h>

/* Start capturing on the ports' nb_queues RX and TX queues into path. 0 or a negative errno. */
int rnic_capture_start(const char *path, const uint16_t *ports, unsigned int nb_ports, uint16_t nb_queues,
		       int socket_id);

/* Remove the callbacks and close the file (the engine's lcores must be stopped). */
void rnic_capture_stop(void);

/* Frames written so far, and frames lost because no copy buffer was free. */
void rnic_capture_counts(uint64_t *written, uint64_t *lost);

#endif /* RNIC_CAPTURE_H */
