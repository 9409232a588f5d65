/** The admin API's access-application operations (docs/design.md §8). Part of control's document (`admin.ts`). */
import {
  AddApplicationRequest,
  ApplicationAdded,
  ApplicationDetail,
  ApplicationInput,
  ApplicationList,
  ApplicationListQuery,
  ApplicationRejected,
  ApprovalResult,
  ApproveApplicationRequest,
  RedeliverApplicationRequest,
  RejectApplicationRequest,
} from '../applications';
import type { Operation } from './operation';
import { pathParam } from './common';
import { admin, created, ok } from './admin-op';

const APPLICATION_ID = pathParam('id', 'the application id (`app_…`)');

export const APPLICATION_OPERATIONS: readonly Operation[] = [
  admin('get', {
    path: '/_admin/v1/applications',
    operationId: 'listApplications',
    summary: 'Applications in review order',
    tag: 'applications',
    query: ApplicationListQuery,
    answers: [ok('Pending by priority, then oldest', { ApplicationList })],
  }),
  admin('get', {
    path: '/_admin/v1/applications/{id}',
    operationId: 'getApplication',
    summary: 'One application, its key and its delivery log',
    tag: 'applications',
    params: [APPLICATION_ID],
    answers: [ok('The application', { ApplicationDetail })],
    errors: ['svc_not_found'],
  }),
  admin('post', {
    path: '/_admin/v1/applications',
    operationId: 'addApplication',
    summary: 'Record an application received by direct contact',
    tag: 'applications',
    body: AddApplicationRequest.extend({ application: ApplicationInput }),
    answers: [created('Recorded', { ApplicationAdded }), ok('The same answers were already received', { ApplicationAdded })],
  }),
  admin('post', {
    path: '/_admin/v1/applications/{id}/approve',
    operationId: 'approveApplication',
    summary: 'Issue a key bound to the application and deliver it',
    tag: 'applications',
    params: [APPLICATION_ID],
    body: ApproveApplicationRequest,
    optionalBody: true,
    answers: [ok('Approved; `delivery` says whether the key reached the applicant', { ApprovalResult })],
    errors: ['svc_not_found', 'svc_conflict'],
  }),
  admin('post', {
    path: '/_admin/v1/applications/{id}/reject',
    operationId: 'rejectApplication',
    summary: 'Reject an application',
    tag: 'applications',
    params: [APPLICATION_ID],
    body: RejectApplicationRequest,
    optionalBody: true,
    answers: [ok('Rejected', { ApplicationRejected })],
    errors: ['svc_not_found', 'svc_conflict'],
  }),
  admin('post', {
    path: '/_admin/v1/applications/{id}/redeliver',
    operationId: 'redeliverApplication',
    summary: 'A new secret for the application’s key, delivered again',
    tag: 'applications',
    params: [APPLICATION_ID],
    body: RedeliverApplicationRequest,
    optionalBody: true,
    answers: [ok('Delivered again', { ApprovalResult })],
    errors: ['svc_not_found', 'svc_conflict'],
  }),
];
