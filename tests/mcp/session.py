"""Drives caseload's MCP server with the MCP Python SDK's client (PyPI `mcp`), as an
assistant would, and prints what each step answered as one JSON object for tests/mcp.rs.

    session.py http URL KEY     # streamable HTTP at URL (http://host:port/mcp), bearer KEY
    session.py stdio CASELOAD URL KEY   # `CASELOAD mcp --url URL --key KEY` as a subprocess
"""

import asyncio
import json
import sys

import httpx2
from mcp import Client
from mcp.client.stdio import StdioServerParameters
from mcp.client.streamable_http import streamable_http_client

TRIANGLE = {"num_nodes": 3, "edges": [[0, 1, 1], [1, 2, 1], [0, 2, 1]]}


def structured(result):
    """A tool result's JSON and whether it is an error."""
    data = result.structured_content
    if data is None:
        text = result.content[0].text
        try:
            data = json.loads(text)
        except ValueError:
            data = text
    return {"error": bool(result.is_error), "data": data}


async def session(client):
    out = {}
    tools = await client.list_tools()
    out["tools"] = sorted(tool.name for tool in tools.tools)
    out["use_cases"] = structured(await client.call_tool("list_use_cases", {}))
    out["maxcut"] = structured(await client.call_tool("get_use_case", {"problem": "maxcut"}))
    launched = structured(await client.call_tool(
        "launch_job", {"problem": "maxcut", "input": TRIANGLE, "options": {"seed": 1}}))
    out["launched"] = launched
    job = launched["data"]["job"]
    waited = structured(await client.call_tool("wait_for_job", {"job": job, "timeout_s": 30}))
    out["waited_status"] = waited["data"]["job"][job]["status"]
    out["output"] = structured(await client.call_tool("get_output", {"job": job}))
    out["refused"] = structured(await client.call_tool(
        "launch_job", {"problem": "maxcut", "input": {"num_nodes": -1}}))
    uploaded = structured(await client.call_tool(
        "upload_data_file", {"content": "3 2\n1 2 1\n2 3 5\n", "media_type": "text/plain"}))
    out["uploaded"] = uploaded
    from_file = structured(await client.call_tool(
        "launch_job", {"problem": "maxcut", "data_file": uploaded["data"].get("data_file_identifier", "")}))
    out["from_file"] = from_file
    if not from_file["error"]:
        file_job = from_file["data"]["job"]
        waited = structured(await client.call_tool("wait_for_job", {"job": file_job}))
        out["from_file_status"] = waited["data"]["job"][file_job]["status"]
        out["from_file_output"] = structured(await client.call_tool("get_output", {"job": file_job}))
    out["evaluated"] = structured(await client.call_tool(
        "evaluate_solution", {"problem": "maxcut", "input": TRIANGLE, "solution": {"partition": [0, 1, 1]}}))
    long = structured(await client.call_tool(
        "launch_job", {"problem": "maxcut", "input": {"num_nodes": 60, "adj_matrix": [
            [0 if i == j else 1 for j in range(60)] for i in range(60)]}, "options": {"time_limit_s": 60}}))
    if not long["error"]:
        out["cancelled"] = structured(await client.call_tool("cancel_job", {"job": long["data"]["job"]}))
    out["listed"] = structured(await client.call_tool("list_jobs", {"problem": "maxcut", "limit": 10}))
    out["missing"] = structured(await client.call_tool("get_job", {"job": "no-such-job"}))
    return out


async def main():
    mode = sys.argv[1]
    if mode == "http":
        url, key = sys.argv[2], sys.argv[3]
        http = httpx2.AsyncClient(headers={"Authorization": f"Bearer {key}"}, timeout=120)
        transport = streamable_http_client(url, http_client=http)
    else:
        caseload, url, key = sys.argv[2], sys.argv[3], sys.argv[4]
        transport = StdioServerParameters(command=caseload, args=["mcp", "--url", url, "--key", key])
    async with Client(transport) as client:
        out = await session(client)
    print(json.dumps(out))


asyncio.run(main())
