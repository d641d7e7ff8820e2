"""Data contracts: each artifact's Great Expectations suite (suites.py), the row checks GX cannot express
(pair_verifier.py, suites.coverage_problems), and the decision stop / quarantine / pass (contract.py)."""

from judgeops.data_contracts.contract import ContractOutcome, ContractParts, ContractViolation, check_contract

__all__ = ["ContractOutcome", "ContractParts", "ContractViolation", "check_contract"]
