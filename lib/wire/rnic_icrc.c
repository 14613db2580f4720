/* SPDX-License-Identifier: BSD-3-Clause */
/* PLACEHOLDER: the wire module replaces this file. */
#include "rnic_wire.h"
