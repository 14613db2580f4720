/* SPDX-License-Identifier: BSD-3-Clause
 * The devices the engine creates on its ports: the device, its doorbell ring and its MR, CQ and QP tables.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include <rte_ethdev.h>
#include <rte_malloc.h>

#include "rnic_cq.h"
#include "rnic_dbq.h"
#include "rnic_mr.h"
#include "rnic_port.h"
#include "rnic_qp.h"
#include "rnic_provider.h"
#include "rnic_runtime.h"

/* EUI-64 from the MAC, as RoCE NICs derive their node GUID. */
static uint64_t
guid_from_mac(const struct rte_ether_addr *mac)
{
	const uint8_t eui[8] = {
		mac->addr_bytes[0] ^ 0x02, mac->addr_bytes[1], mac->addr_bytes[2], 0xff, 0xfe,
		mac->addr_bytes[3], mac->addr_bytes[4], mac->addr_bytes[5],
	};
	uint64_t guid;

	memcpy(&guid, eui, sizeof(guid));
	return guid;
}

static int
create_tables(struct rnic_device *dev)
{
	char name[RTE_RING_NAMESIZE];
	int ret;

	snprintf(name, sizeof(name), "rnic_db_%.12s", dev->name);
	dev->doorbell_ring = rte_ring_create_elem(name, sizeof(uint64_t), dev->doorbell_ring_size,
						  dev->socket_id, RING_F_SC_DEQ);
	if (dev->doorbell_ring == NULL) {
		RNIC_LOG(ERR, "%s: cannot create the doorbell ring: %s", dev->name, rte_strerror(rte_errno));
		return -ENOMEM;
	}
	dev->client_dbq = rte_zmalloc_socket("rnic_client_dbq", sizeof(*dev->client_dbq) * RNIC_MAX_CLIENT_DBQ,
					     RTE_CACHE_LINE_SIZE, dev->socket_id);
	if (dev->client_dbq == NULL)
		return -ENOMEM;
	ret = rnic_mr_table_create(dev);
	if (ret == 0)
		ret = rnic_cq_table_create(dev);
	if (ret == 0)
		ret = rnic_qp_table_create(dev);
	return ret;
}

static void
free_tables(struct rnic_device *dev)
{
	rnic_qp_table_free(dev);
	rnic_cq_table_free(dev);
	rnic_mr_table_free(dev);
	rte_ring_free(dev->doorbell_ring);
	dev->doorbell_ring = NULL;
	rte_free(dev->client_dbq);
	dev->client_dbq = NULL;
}

int
rnic_device_create(const struct rnic_device_conf *conf, struct rnic_device **out)
{
	struct rnic_device *dev;
	int ret;

	dev = rte_zmalloc_socket("rnic_device", sizeof(*dev), RTE_CACHE_LINE_SIZE,
				 rte_eth_dev_socket_id(conf->port_id));
	if (dev == NULL)
		return -ENOMEM;
	snprintf(dev->name, sizeof(dev->name), "%s", conf->name);
	dev->ops = rnic_provider_find(0)->ops;	/* the local provider's (lib/device) */
	dev->port_id = conf->port_id;
	dev->tx_kick = rnic_port_tx_needs_kick(conf->port_id) ? rnic_port_tx_kick : NULL;
	dev->socket_id = rte_eth_dev_socket_id(conf->port_id);
	if (dev->socket_id < 0)
		dev->socket_id = (int)rte_socket_id();
	dev->active_mtu = conf->mtu;
	dev->shared_tx_queue = conf->shared_tx_queue;
	dev->lim = conf->lim;
	dev->cc = conf->cc;
	dev->doorbell_ring_size = conf->doorbell_ring_size;
	memcpy(dev->gid, conf->gid, sizeof(dev->gid));
	dev->gid_count = conf->gid_count;
	dev->next_pdn = 1;
	pthread_mutex_init(&dev->lock, NULL);

	ret = rte_eth_macaddr_get(conf->port_id, &dev->mac);
	if (ret == 0 && rte_is_zero_ether_addr(&dev->mac)) {
		/* Ring ports have no address of their own: give each a locally administered one. */
		dev->mac = (struct rte_ether_addr){ { 0x02, 0x52, 0x4e, 0x49, 0x43, (uint8_t)conf->port_id } };
	}
	dev->guid = guid_from_mac(&dev->mac);

	if (ret == 0)
		ret = create_tables(dev);
	if (ret < 0) {
		RNIC_LOG(ERR, "%s: cannot create the device: %s", conf->name, strerror(-ret));
		free_tables(dev);
		rte_free(dev);
		return ret;
	}
	*out = dev;
	return 0;
}

int
rnic_device_destroy(struct rnic_device *dev)
{
	if (dev->open_contexts != 0)
		return -EBUSY;
	free_tables(dev);
	pthread_mutex_destroy(&dev->lock);
	rte_free(dev);
	return 0;
}
