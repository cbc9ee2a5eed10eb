import { expect } from 'chai';
import type { OutflowContext, OutflowStatus } from '#machines/outflow.machine.ts';
import { outflowEventOf, payoutEventsOf, UNSPECIFIED_FAILURE } from '#src/dispatch/service.ts';

const now = new Date('2026-01-01T00:00:00Z');
const failed: OutflowContext = {
  processorReference: 'prc_1',
  failureCode: 'PROCESSOR_TIMEOUT',
  failureReason: 'slow',
  retryable: true,
};

const events = (from: OutflowStatus, to: OutflowStatus, attemptsLeft = true) =>
  payoutEventsOf({ from, to, context: failed, attemptsLeft, triggeredBy: 'PROCESSOR_WEBHOOK', now }).map(
    (e) => e.type,
  );

describe('dispatch verdicts (pure)', () => {
  it('maps each processor status to one outflow event; a refusal at submit is a REJECTED', () => {
    const base = { processorReference: 'prc_1', failureCode: null, failureReason: null, retryable: false };
    expect(outflowEventOf({ ...base, status: 'ACCEPTED' }, 'SUBMIT', now).type).to.equal('ACCEPTED');
    expect(outflowEventOf({ ...base, status: 'SUCCESSFUL' }, 'CALLBACK', now).type).to.equal('SUCCEEDED');
    const failure = {
      ...base,
      status: 'FAILED' as const,
      failureCode: 'ACCOUNT_CLOSED',
      failureReason: 'closed',
    };
    expect(outflowEventOf(failure, 'SUBMIT', now)).to.include({
      type: 'REJECTED',
      failureCode: 'ACCOUNT_CLOSED',
    });
    expect(outflowEventOf(failure, 'QUERY', now)).to.include({
      type: 'FAILED',
      failureCode: 'ACCOUNT_CLOSED',
    });
  });

  it('records a failure the processor gave no code for under UNSPECIFIED_FAILURE', () => {
    const event = outflowEventOf(
      { status: 'FAILED', processorReference: null, failureCode: null, failureReason: null, retryable: true },
      'CALLBACK',
      now,
    );
    expect(event).to.include({ type: 'FAILED', failureCode: UNSPECIFIED_FAILURE, retryable: true });
  });

  it('tells the payout about the dispatch first when an outcome overtook the acceptance', () => {
    expect(events('PENDING', 'PROCESSING')).to.deep.equal(['DISPATCH_ACCEPTED']);
    expect(events('PENDING', 'SUCCESSFUL')).to.deep.equal(['DISPATCH_ACCEPTED', 'PROCESSOR_SUCCEEDED']);
    expect(events('PROCESSING', 'SUCCESSFUL')).to.deep.equal(['PROCESSOR_SUCCEEDED']);
    expect(events('PENDING', 'FAILED')).to.deep.equal(['DISPATCH_FAILED']);
    expect(events('PROCESSING', 'FAILED')).to.deep.equal(['PROCESSOR_FAILED']);
  });

  it('carries the failure and whether attempts are left', () => {
    const [event] = payoutEventsOf({
      from: 'PROCESSING',
      to: 'FAILED',
      context: failed,
      attemptsLeft: false,
      triggeredBy: 'SYSTEM',
      now,
    });
    expect(event).to.deep.include({
      type: 'PROCESSOR_FAILED',
      failureCode: 'PROCESSOR_TIMEOUT',
      failureReason: 'slow',
      retryable: true,
      attemptsLeft: false,
      triggeredBy: 'SYSTEM',
    });
  });
});
