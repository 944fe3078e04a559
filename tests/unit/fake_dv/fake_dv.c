/* Stand-ins for the BNXT and Ionic direct-verbs libraries (src/rdma/vendor_dv.hpp), for
 * unit.vendor_dv: every function VendorDv resolves, as a stub that fails. Built twice
 * (CMakeLists.txt here): complete, and with MORI_FAKE_DV_INCOMPLETE, without bnxt_re_dv_create_qp
 * and ionic_dv_get_qp. Only their names matter: nothing calls them. Test-only; not installed. */
#define STUB(name) \
  int name(void) { return -1; }

STUB(bnxt_re_dv_umem_reg)
STUB(bnxt_re_dv_umem_dereg)
STUB(bnxt_re_dv_create_cq)
STUB(bnxt_re_dv_destroy_cq)
#ifndef MORI_FAKE_DV_INCOMPLETE
STUB(bnxt_re_dv_create_qp)
#endif
STUB(bnxt_re_dv_destroy_qp)
STUB(bnxt_re_dv_modify_qp)
STUB(bnxt_re_dv_init_obj)
STUB(bnxt_re_dv_get_default_db_region)

STUB(ionic_dv_get_ctx)
#ifndef MORI_FAKE_DV_INCOMPLETE
STUB(ionic_dv_get_qp)
#endif
STUB(ionic_dv_get_cq)
STUB(ionic_dv_qp_get_udma_idx)
STUB(ionic_dv_pd_set_sqcmb)
STUB(ionic_dv_pd_set_rqcmb)
STUB(ionic_dv_pd_set_udma_mask)
