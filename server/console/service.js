// The service: every replica's workers (busy and idle), the queue per use case, and jobs
// accepted and ended per minute: the numbers /metrics exposes, read for the whole service
// from the store (GET /service).

import { ApiError, get } from './api.js';
import { barChart, legend } from './chart.js';
import { fill, h, notice, page, when } from './dom.js';

export function servicePage() {
  const replicas = h('tbody', {});
  const queue = h('tbody', {});
  const chart = h('canvas', { class: 'chart wide', role: 'img', 'aria-label': 'Jobs accepted and ended per minute' });
  page('Service',
    h('h2', {}, 'Replicas'),
    h('div', { class: 'table-wrap', tabindex: '0', role: 'region', 'aria-label': 'Replicas table' }, h('table', {},
      h('thead', {}, h('tr', {}, ['Replica', 'State', 'Workers', 'Busy', 'Idle', 'Accepted', 'Ended', 'Started', 'Last report'].map((name) => h('th', { scope: 'col' }, name)))),
      replicas)),
    h('h2', {}, 'Queue'),
    h('div', { class: 'table-wrap', tabindex: '0', role: 'region', 'aria-label': 'Queue table' }, h('table', {},
      h('thead', {}, h('tr', {}, ['Use case', 'Pending', 'Claimed or running'].map((name) => h('th', { scope: 'col' }, name)))),
      queue)),
    h('h2', {}, 'Per minute, last hour'),
    h('figure', {}, chart, h('figcaption', {}, legend(['accepted', 'ended']))));

  const refresh = async () => {
    try {
      const service = await get('/service');
      fill(replicas, service.replicas.map((replica) => h('tr', { class: replica.live ? '' : 'gone' },
        h('td', {}, replica.name),
        h('td', {}, replica.live ? 'live' : replica.stopped_at ? 'stopped' : 'silent'),
        h('td', {}, replica.workers),
        h('td', {}, replica.busy),
        h('td', {}, replica.idle),
        h('td', {}, replica.accepted_total),
        h('td', {}, replica.ended_total),
        h('td', {}, when(replica.started_at)),
        h('td', {}, when(replica.seen_at)))));
      fill(queue, service.queue.length ? service.queue.map((depth) => h('tr', {},
        h('td', {}, depth.problem), h('td', {}, depth.pending), h('td', {}, depth.running))) :
        h('tr', {}, h('td', { colspan: '3' }, 'Nothing waiting.')));
      barChart(chart, service.per_minute.map((minute) => ({ label: minute.minute, values: [minute.accepted, minute.ended] })),
        ['accepted', 'ended'], { title: 'Jobs per minute, last hour' });
    } catch (error) {
      if (error instanceof ApiError) notice(error.message, 'error');
      else throw error;
    }
  };
  refresh();
  const timer = setInterval(refresh, 5000);
  return () => clearInterval(timer);
}
