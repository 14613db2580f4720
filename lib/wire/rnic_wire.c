/* SPDX-License-Identifier: BSD-3-Clause */
/* PLACEHOLDER: the wire module replaces this file. */
#include "rnic_wire.h"
const struct rnic_opcode_info rnic_opcode_table[256];
