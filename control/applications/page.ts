/**
 * The application form ({api_url}/apply) and its thank-you page: plain HTML with a little
 * inline JavaScript that hides the questions not asked for the chosen applicant type. Without
 * JavaScript every question is shown with a note saying whom it is for, and the server ignores
 * the answers that do not apply. Both are pages of the site (`../pages/layout.ts`: its
 * header and stylesheet, light and dark), answered by `sendHtml` (`respond.ts`) with the one
 * CSP; every value written into the page is HTML-escaped.
 */
import { ANSWER_WITHIN_HOURS, APPLICANT_TYPE_LABELS, APPLICANT_TYPES, FIELD_LIMITS } from '../../protocol/applications';
import { escapeHtml, renderDocument } from '../pages/layout';
import type { PageUrls } from '../pages/respond';

/** What a re-rendered form shows: the user's values and an error per field. */
export interface FormState {
  values: Record<string, string | boolean>;
  errors: Record<string, string>;
  /** A message above the form (e.g. too many submissions). */
  notice?: string;
}

export const EMPTY_FORM: FormState = { values: {}, errors: {} };

/**
 * Shows "which APIs" for AI agents only, and "why" per the rule in protocol/applications.ts
 * (`whyAsked`). Hidden questions are disabled so their answers are not sent.
 */
const SCRIPT = `
(function () {
  document.documentElement.className += ' js';
  var form = document.getElementById('apply-form');
  var apisField = document.getElementById('apis-field');
  var whyField = document.getElementById('why-field');
  var apis = document.getElementById('f-apis_paid');
  var why = document.getElementById('f-why');
  function chosen() {
    var checked = form.querySelector('input[name="applicant_type"]:checked');
    return checked ? checked.value : '';
  }
  function paysForApis() {
    return apis.value.split(/[\\r\\n,]+/).some(function (s) { return s.trim() !== ''; });
  }
  function show(field, input, visible) {
    field.hidden = !visible;
    input.disabled = !visible;
  }
  function ask(field, input, visible) {
    show(field, input, visible);
    input.required = visible;
  }
  function update() {
    var type = chosen();
    show(apisField, apis, type === 'ai_agent');
    ask(whyField, why, type === 'api_merchant' || type === 'ai_agent_merchant' || (type === 'ai_agent' && !paysForApis()));
  }
  form.addEventListener('change', update);
  apis.addEventListener('input', update);
  update();
})();
`;

const LABELS: Record<string, string> = {
  building: 'What are you building?',
  contact_name: 'Contact name',
  wallet: 'Wallet address (optional)',
  social_url: 'Project or personal social link',
  messaging_handle: 'Messaging handle',
  applicant_type: 'You are',
  apis_paid: 'Which APIs does your agent pay for now?',
  why: 'Why do you want to try svc?',
  feedback_opt_in: 'Feedback after use',
};

/** How the error summary names each field in a sentence ("Contact name is required"). */
const SUBJECTS: Record<string, string> = {
  building: 'What you are building',
  contact_name: 'Contact name',
  wallet: 'Wallet address',
  social_url: 'Social link',
  messaging_handle: 'Messaging handle',
  applicant_type: 'Who you are',
  apis_paid: 'The APIs your agent pays for',
  why: 'Why you want to try svc',
  feedback_opt_in: 'Feedback after use',
};

/** Marks a required question before anything is sent; `js-only` for one only some applicants are asked. */
const REQUIRED = ' <span class="req">(required)</span>';
const REQUIRED_WHEN_ASKED = ' <span class="req js-only">(required)</span>';

const requiredMark = (attrs: string, name: string): string =>
  / required\b/.test(attrs) ? REQUIRED : name === 'why' ? REQUIRED_WHEN_ASKED : '';

/** An error as a sentence: "Why you want to try svc is required for merchants". */
const sentence = (name: string, error: string): string => `${SUBJECTS[name] ?? name} ${error}`;

/** Field order, for the error summary. */
const ORDER = Object.keys(LABELS);

const TYPE_HINTS: Record<string, string> = {
  ai_agent: 'You build or run an agent that calls paid APIs.',
  api_merchant: 'You sell an API that agents call.',
  ai_agent_merchant: 'You sell an agent, or a service built on agents.',
};

function str(state: FormState, name: string): string {
  const v = state.values[name];
  return typeof v === 'string' ? v : '';
}

function describedBy(name: string, state: FormState, extra: string[] = []): string {
  const ids = [`f-${name}-hint`, ...extra, ...(state.errors[name] ? [`f-${name}-error`] : [])];
  return ` aria-describedby="${ids.join(' ')}"${state.errors[name] ? ' aria-invalid="true"' : ''}`;
}

function errorLine(name: string, state: FormState): string {
  const error = state.errors[name];
  return error
    ? `<p class="error" id="f-${name}-error"><span class="visually-hidden">Error: </span>${escapeHtml(sentence(name, error))}</p>`
    : '';
}

function fieldClass(name: string, state: FormState): string {
  return state.errors[name] ? 'field has-error' : 'field';
}

function textInput(name: string, hint: string, state: FormState, attrs: string, max: number): string {
  return `
    <div class="${fieldClass(name, state)}">
      <label for="f-${name}">${escapeHtml(LABELS[name]!)}${requiredMark(attrs, name)}</label>
      <p class="hint" id="f-${name}-hint">${hint}</p>
      ${errorLine(name, state)}
      <input type="text" id="f-${name}" name="${name}" value="${escapeHtml(str(state, name))}" maxlength="${max}"${attrs}${describedBy(name, state)}>
    </div>`;
}

function textArea(
  name: string,
  hint: string,
  state: FormState,
  attrs: string,
  max: number,
  rows: number,
  forNote = '',
  wrapperId = '',
): string {
  const noteId = forNote ? [`f-${name}-for`] : [];
  return `
    <div class="${fieldClass(name, state)}"${wrapperId ? ` id="${wrapperId}"` : ''}>
      <label for="f-${name}">${escapeHtml(LABELS[name]!)}${requiredMark(attrs, name)}</label>
      ${forNote ? `<p class="for" id="f-${name}-for">${forNote}</p>` : ''}
      <p class="hint" id="f-${name}-hint">${hint}</p>
      ${errorLine(name, state)}
      <textarea id="f-${name}" name="${name}" rows="${rows}" maxlength="${max}"${attrs}${describedBy(name, state, noteId)}>${escapeHtml(str(state, name))}</textarea>
    </div>`;
}

function typeChoices(state: FormState): string {
  const current = str(state, 'applicant_type');
  const choices = APPLICANT_TYPES.map(
    (type) => `
        <div class="choice">
          <input type="radio" id="f-applicant_type-${type}" name="applicant_type" value="${type}"${current === type ? ' checked' : ''} required aria-describedby="f-applicant_type-${type}-hint">
          <label for="f-applicant_type-${type}">${escapeHtml(APPLICANT_TYPE_LABELS[type])} <span class="hint" id="f-applicant_type-${type}-hint">— ${escapeHtml(TYPE_HINTS[type]!)}</span></label>
        </div>`,
  ).join('');
  return `
    <fieldset class="${fieldClass('applicant_type', state)}" id="f-applicant_type" tabindex="-1"${state.errors.applicant_type ? ' aria-describedby="f-applicant_type-error"' : ''}>
      <legend>${LABELS.applicant_type}${REQUIRED}</legend>
      ${errorLine('applicant_type', state)}
      ${choices}
    </fieldset>`;
}

function summary(state: FormState): string {
  const names = Object.keys(state.errors).sort((a, b) => ORDER.indexOf(a) - ORDER.indexOf(b));
  if (names.length === 0) return '';
  const items = names.map((name) => `<li><a href="#f-${name}">${escapeHtml(sentence(name, state.errors[name]!))}</a></li>`).join('');
  return `
    <div class="summary" role="alert" aria-labelledby="summary-title" id="error-summary" tabindex="-1">
      <h2 id="summary-title">Please correct ${names.length === 1 ? 'this answer' : `these ${names.length} answers`}</h2>
      <ul>${items}</ul>
    </div>`;
}

/** A page of the site (`layout.ts`: header, stylesheet, light and dark) with the apply link current. */
function page(nonce: string, urls: PageUrls, title: string, main: string, script?: string): string {
  return renderDocument({ title, current: 'apply', urls, main, ...(script ? { script } : {}) }, nonce);
}

/** The form, empty or re-rendered with the user's values and errors. */
export function renderForm(nonce: string, urls: PageUrls, state: FormState): string {
  const hasErrors = Object.keys(state.errors).length > 0;
  const content = `
  <h1>Apply for svc private beta access</h1>
  <p>svc is a reliability gateway for AI agents that pay for third-party APIs: it refunds failed
  calls from a coverage pool. Access is by API key. We answer every application within
  ${ANSWER_WITHIN_HOURS} hours and send the key over the messaging handle you give below.
  Agent developers with active usage are looked at first.</p>
  ${state.notice ? `<div class="notice" role="alert">${escapeHtml(state.notice)}</div>` : ''}
  ${summary(state)}
  <p class="small">Questions marked (required) must be answered; the browser checks them before sending, and svc checks them again.</p>
  <form id="apply-form" method="post" action="/apply">
    ${textArea('building', 'A sentence or two about your project and how it would use svc.', state, ' required', FIELD_LIMITS.building, 4)}
    ${textInput('contact_name', 'Who we talk to.', state, ' required autocomplete="name"', FIELD_LIMITS.contact_name)}
    ${textInput('wallet', 'A Solana or EVM (0x…) address where refunds and claim payouts are attributed. Optional: it can be added later, and access never depends on it.', state, ' autocomplete="off" spellcheck="false"', 64)}
    ${textInput('social_url', 'A link to the project’s or your own profile, e.g. https://x.com/yourproject or https://github.com/you.', state, ' required inputmode="url" autocomplete="url" spellcheck="false"', FIELD_LIMITS.social_url)}
    ${textInput('messaging_handle', 'Where we send your API key, e.g. Telegram @you, Discord you, Signal +1 555…, or an email address.', state, ' required spellcheck="false"', FIELD_LIMITS.messaging_handle)}
    ${typeChoices(state)}
    ${textArea('apis_paid', 'One per line, e.g. OpenAI, Exa, Firecrawl. Leave empty if your agent pays for none yet.', state, '', FIELD_LIMITS.apis_paid * (FIELD_LIMITS.api_name + 1), 3, 'Only for AI agents: other applicant types can leave this empty.', 'apis-field')}
    ${textArea('why', 'What you hope svc does for you.', state, '', FIELD_LIMITS.why, 3, 'Only for API merchants, AI agent merchants, and AI agents that pay for no API yet.', 'why-field')}
    <div class="${fieldClass('feedback_opt_in', state)}">
      <div class="choice">
        <input type="checkbox" id="f-feedback_opt_in" name="feedback_opt_in" value="yes"${state.values.feedback_opt_in === true ? ' checked' : ''} aria-describedby="f-feedback_opt_in-hint">
        <label for="f-feedback_opt_in">I will give feedback after using svc</label>
      </div>
      <p class="hint" id="f-feedback_opt_in-hint">Ticking this makes you an early tester: early testers get special offers, such as raised rate caps and first access to new endpoints.</p>
    </div>
    <button type="submit">Send application</button>
  </form>
  <p class="small">If this form does not work for you, contact the svc operators directly with the same
  details; they record your application for you and the same ${ANSWER_WITHIN_HOURS}-hour answer applies.</p>`;
  const focusErrors = hasErrors ? `\n(function () { var s = document.getElementById('error-summary'); if (s) s.focus(); })();` : '';
  return page(nonce, urls, `${hasErrors ? 'Error: ' : ''}Apply for svc beta access`, content, SCRIPT + focusErrors);
}

/** The page after a successful submission (303 target). */
export function renderThanks(nonce: string, urls: PageUrls, id: string | null): string {
  const reference = id === null ? '' : `<p>Your reference: <strong id="application-id">${escapeHtml(id)}</strong></p>`;
  return page(
    nonce,
    urls,
    'Application received — svc',
    `
  <h1>Application received</h1>
  ${reference}
  <p>Thank you. We answer within ${ANSWER_WITHIN_HOURS} hours over the messaging handle you gave.
  If you are approved, your API key arrives there: it is shown once and cannot be recovered,
  so store it when it arrives.</p>
  <p><a href="/apply">Back to the form</a></p>`,
  );
}

/** A short page for failures that are not about a field (body too large, bad content type). */
export function renderProblem(nonce: string, urls: PageUrls, title: string, detail: string): string {
  return page(
    nonce,
    urls,
    `${title} — svc`,
    `<h1>${escapeHtml(title)}</h1><p>${escapeHtml(detail)}</p><p><a href="/apply">Back to the form</a></p>`,
  );
}
