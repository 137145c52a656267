"""Avro single-object encoding of mooncake's records (fastavro, from schemas/*.avsc):
what the workload writes and the verdict reads back."""

import io
import json
import os

from base import APP, ROOT

# ---- Avro single-object encoding (fastavro, from schemas/*.avsc) ------------------------

def _strip_logical_types(node):
    """Timestamps as plain longs: no datetime objects to convert back. The
    fingerprint does not change (Parsing Canonical Form drops logicalType)."""
    if isinstance(node, dict):
        return {k: _strip_logical_types(v) for k, v in node.items() if k != "logicalType"}
    if isinstance(node, list):
        return [_strip_logical_types(v) for v in node]
    return node


class Codec:
    NAMES = ("Command", "WheelEntry", "Result", "Attempt", "DeadLetter", "JobCommand",
             "JobState", "Endpoint")

    def __init__(self):
        import fastavro
        import fastavro.schema
        self.fastavro = fastavro
        self.schemas = {}
        for name in self.NAMES:
            with open(os.path.join(ROOT, "schemas", name + ".avsc")) as f:
                sj = json.load(f)
            fp = fastavro.schema.fingerprint(
                fastavro.schema.to_parsing_canonical_form(sj), "CRC-64-AVRO")
            self.schemas[name] = (fastavro.parse_schema(_strip_logical_types(sj)),
                                  b"\xc3\x01" + bytes.fromhex(fp))

    def encode(self, name, record):
        schema, header = self.schemas[name]
        buf = io.BytesIO()
        buf.write(header)
        self.fastavro.schemaless_writer(buf, schema, record)
        return buf.getvalue()

    def decode(self, name, data):
        """The record, or None when data is not a single-object record of this
        schema (a marker, a record of another schema or version)."""
        schema, header = self.schemas[name]
        if not data or data[:10] != header:
            return None
        try:
            return self.fastavro.schemaless_reader(io.BytesIO(data[10:]), schema,
                                                   return_record_name=True)
        except Exception:
            return None

    def submit(self, task):
        return self.encode("Command", {"payload": ("mooncake.Submit", {"task": task})})

    def cancel(self, task_id, at):
        return self.encode("Command", {"payload": ("mooncake.Cancel", {
            "app_id": APP, "task_id": task_id, "requested_at": at})})

    def add_link(self, chain, task):
        return self.encode("JobCommand", {"payload": ("mooncake.AddLink", {
            "ordering_key": chain, "task": task})})

    def cancel_link(self, chain, task_id, at):
        return self.encode("JobCommand", {"payload": ("mooncake.CancelLink", {
            "app_id": APP, "ordering_key": chain, "task_id": task_id, "requested_at": at})})

    def put_job(self, job):
        return self.encode("JobCommand", {"payload": ("mooncake.PutJob", {"job": job})})

    def job_action(self, job_id, action, at):
        return self.encode("JobCommand", {"payload": ("mooncake.JobAction", {
            "app_id": APP, "job_id": job_id, "action": action, "requested_at": at})})

    def group(self, name, members, strategy, unhealthy_ms, at):
        """An endpoint group of the app (key group/<APP>/<name> in <prefix>endpoints)."""
        return self.encode("Endpoint", {"payload": ("mooncake.EndpointGroup", {
            "app_id": APP, "name": name, "members": list(members), "dns": [],
            "strategy": strategy, "member_concurrency": 0, "unhealthy_ms": unhealthy_ms,
            "updated_at": at})})

    def limit(self, scope, name, max_concurrent, max_per_second, at):
        """An admission limit (key limit/host/<host> or limit/app/<app>)."""
        return self.encode("Endpoint", {"payload": ("mooncake.AdmissionLimit", {
            "scope": scope, "name": name, "max_concurrent": max_concurrent,
            "max_per_second": float(max_per_second), "updated_at": at})})
