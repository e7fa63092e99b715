/* SPDX-License-Identifier: BSD-2-Clause */
/* version: the one place the release number is written. */
#ifndef WARRANTD_VERSION_H
#define WARRANTD_VERSION_H

#define WARRANTD_VERSION "0.1.0"

#endif
