"""Uses a client generated from /openapi.json by openapi-python-client: logs in, launches
max-cut through its typed call, waits for the job with a long-poll, reads its output and
finds it in the list; then uploads a G-set file as a dataset and launches max-cut on it through
the typed dataset launch. Prints what it saw as JSON; any failure raises.

    python smoke.py GENERATED_DIR BASE_URL USERNAME PASSWORD
"""

import io
import json
import sys

generated, base_url, username, password = sys.argv[1:5]
sys.path.insert(0, generated)

from caseload_client import AuthenticatedClient, Client  # noqa: E402
from caseload_client.api.default import (  # noqa: E402
    get_job,
    get_job_output,
    launch_maxcut,
    list_jobs,
    login,
    upload_data_file,
)
from caseload_client.models import DataFile, Login, MaxcutDatasetLaunch, Token  # noqa: E402
from caseload_client.types import File  # noqa: E402

token = login.sync(client=Client(base_url=base_url), body=Login(username=username, password=password))
assert isinstance(token, Token), token
client = AuthenticatedClient(base_url=base_url, token=token.access_token)

accepted = launch_maxcut.sync_detailed(
    client=client,
    body={"num_nodes": 3, "edges": [[0, 1, 1], [1, 2, 1]], "labels": {"from": "generated"}},
)
assert accepted.status_code == 202, accepted
job_id = accepted.parsed.job

# The 200 of GET /job parses into the generated model.
status = get_job.sync_detailed(client=client, job_id=job_id, wait=30)
assert status.status_code == 200, status
job = status.parsed.job.additional_properties[job_id]
assert job.status.value == "COMPLETED", job

output = get_job_output.sync_detailed(client=client, job_id=job_id)
assert output.status_code == 200, output
listed = list_jobs.sync(client=client, label=["from:generated"], status="COMPLETED")
assert [entry.id for entry in listed.jobs] == [job_id], listed

# A dataset: the path 1-2-3 as a G-set file, its media type guessed from the filename.
uploaded = upload_data_file.sync_detailed(
    client=client,
    body=File(payload=io.BytesIO(b"3 2\n1 2 1\n2 3 1\n"), file_name="path.txt"),
    filename="path.txt",
)
assert uploaded.status_code == 201, uploaded
data_file = uploaded.parsed
assert isinstance(data_file, DataFile), data_file
assert data_file.media_type == "text/plain", data_file
on_dataset = launch_maxcut.sync_detailed(
    client=client,
    body=MaxcutDatasetLaunch(data_file_identifier=data_file.data_file_identifier),
)
assert on_dataset.status_code == 202, on_dataset
dataset_job = on_dataset.parsed.job
status = get_job.sync_detailed(client=client, job_id=dataset_job, wait=30)
assert status.status_code == 200, status
dataset_status = status.parsed.job.additional_properties[dataset_job].status.value
dataset_output = get_job_output.sync_detailed(client=client, job_id=dataset_job)
assert dataset_output.status_code == 200, dataset_output

print(
    json.dumps(
        {
            "job": job_id,
            "status": job.status.value,
            "cut": json.loads(output.content)["cut_value"],
            "dataset_status": dataset_status,
            "dataset_cut": json.loads(dataset_output.content)["cut_value"],
        }
    )
)
