/* SPDX-License-Identifier: MIT */
/*
 * t/rsmi-shim.c - a "ROCm SMI library" that has only a few of the real
 * one's functions, each passed on to the real librocm_smi64: what an old
 * library looks like to tally-rocm-helper (t/t1102-rocm-smi-helper.t,
 * option library). Only the rsmi_* symbols below are exported.
 */
#include <dlfcn.h>
#include <stddef.h>
#include <stdint.h>

#include <rocm_smi/rocm_smi.h>

static void *real(const char *sym)
{
	static void *h;

	if (!h)
		h = dlopen("librocm_smi64.so.1", RTLD_NOW | RTLD_LOCAL);
	return h ? dlsym(h, sym) : NULL;
}

#define PASS(ret, name, params, args)                                         \
	ret name params                                                       \
	{                                                                     \
		ret(*f) params = (ret(*) params)real(#name);                  \
		return f ? f args : RSMI_STATUS_NOT_SUPPORTED;                \
	}

PASS(rsmi_status_t, rsmi_init, (uint64_t flags), (flags))
PASS(rsmi_status_t, rsmi_num_monitor_devices, (uint32_t * n), (n))
PASS(rsmi_status_t, rsmi_dev_pci_id_get, (uint32_t d, uint64_t *id), (d, id))
PASS(rsmi_status_t, rsmi_dev_busy_percent_get, (uint32_t d, uint32_t *b),
     (d, b))
PASS(rsmi_status_t, rsmi_dev_temp_metric_get,
     (uint32_t d, uint32_t t, rsmi_temperature_metric_t m, int64_t *v),
     (d, t, m, v))
